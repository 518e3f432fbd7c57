// raygw dashboard: the page state, the refresh loop, rendering and actions
// over the admin REST API under /api/v1/deployments. Every server-provided
// string is written with textContent (never as HTML), and the admin key
// lives in sessionStorage only.
import { APIError, api, accessProblem, listProblem, ago, until, span, num, ms, pct } from './api.js';

const KEY_STORAGE = 'raygw.adminKey';
const REFRESH_MS = 2000;
const API = '/api/v1/deployments';
const STATES = ['deploying', 'running', 'degraded', 'unhealthy', 'deleting', 'starting', 'healthy'];
const $ = (id) => document.getElementById(id);

const state = {
  key: null,             // admin key in use; null when signed out
  selected: null,        // deployment shown in the details view
  deployments: new Map(), // name -> last status
  timer: 0,
  busy: false,           // a refresh is running (refreshes never overlap)
  again: false,          // refresh again as soon as the running one ends
  epoch: 0,              // bumped on sign-in/out; stale answers are dropped
  scaleDirty: false,     // the operator is editing the replicas field
};

// ---- storage and API ----------------------------------------------------

function readKey() {
  try { return sessionStorage.getItem(KEY_STORAGE); } catch (e) { return null; }
}

function storeKey(key) {
  try {
    if (key) sessionStorage.setItem(KEY_STORAGE, key); else sessionStorage.removeItem(KEY_STORAGE);
  } catch (e) { /* storage disabled: the key lives in memory only */ }
}

// call is api with the key in use.
function call(method, path, body) {
  return api(state.key, method, path, body);
}

// ---- small DOM helpers --------------------------------------------------

function show(id, text) {
  const el = $(id);
  el.textContent = text || '';
  el.hidden = !text;
}

function setText(el, text) {
  const s = text === undefined || text === null || text === '' ? '–' : String(text);
  if (el.textContent !== s) el.textContent = s;
}

function statusClass(s) {
  return STATES.includes(s) ? 'status-' + s : '';
}

function setBadge(el, status) {
  el.className = ('badge ' + statusClass(status)).trim();
  el.dataset.status = String(status || '');
  setText(el, status);
}

function td(cls) {
  const cell = document.createElement('td');
  if (cls) cell.className = cls;
  return cell;
}

function healthyCount(d) {
  return (d.replicas_status || []).filter((r) => r.status === 'healthy' && !r.draining).length;
}

// ---- sign-in ------------------------------------------------------------

function showLogin(message) {
  $('app').hidden = true;
  $('session').hidden = true;
  $('login').hidden = false;
  show('login-error', message);
  $('admin-key').focus();
}

function showApp() {
  $('login').hidden = true;
  show('login-error', '');
  $('app').hidden = false;
  $('session').hidden = false;
}

async function signIn(ev) {
  ev.preventDefault();
  const key = $('admin-key').value.trim();
  if (!key) {
    show('login-error', 'Enter an admin key.');
    return;
  }
  const button = $('login-submit');
  button.disabled = true;
  show('login-error', '');
  try {
    const data = await api(key, 'GET', API);
    $('admin-key').value = '';
    storeKey(key);
    state.key = key;
    state.epoch++;
    showApp();
    renderList((data && data.deployments) || []);
    schedule(REFRESH_MS);
  } catch (e) {
    show('login-error', listProblem(e));
  } finally {
    button.disabled = false;
  }
}

function signOut(message) {
  storeKey(null);
  state.key = null;
  state.epoch++;
  clearTimeout(state.timer);
  state.again = false;
  closeDetails();
  renderList([]);
  show('app-error', '');
  setText($('refreshed'), '');
  showLogin(message);
}

// ---- refresh loop -------------------------------------------------------

function schedule(ms) {
  clearTimeout(state.timer);
  state.timer = setTimeout(refresh, ms);
}

// refreshNow refreshes as soon as possible without overlapping a running
// refresh.
function refreshNow() {
  if (state.busy) state.again = true; else schedule(0);
}

async function refresh() {
  if (!state.key) return;
  if (state.busy) { state.again = true; return; }
  state.busy = true;
  clearTimeout(state.timer);
  const epoch = state.epoch;
  try {
    const data = await call('GET', API);
    if (epoch !== state.epoch) return;
    renderList((data && data.deployments) || []);
    await refreshDetails(epoch);
    if (epoch !== state.epoch) return;
    show('app-error', '');
    $('refreshed').textContent = 'Updated ' + new Date().toLocaleTimeString();
  } catch (e) {
    if (epoch !== state.epoch) return;
    const access = accessProblem(e);
    if (access) { signOut(access); return; }
    show('app-error', 'Refresh failed: ' + listProblem(e));
  } finally {
    state.busy = false;
    // After a sign-out and a new sign-in during this refresh, the new
    // session's timer may have found us busy and asked for another run.
    if (state.key && (epoch === state.epoch || state.again)) {
      schedule(state.again ? 0 : REFRESH_MS);
    }
    state.again = false;
  }
}

async function refreshDetails(epoch) {
  const name = state.selected;
  if (!name) return;
  const d = state.deployments.get(name);
  if (!d) {
    closeDetails();
    return;
  }
  renderDetails(d);
  try {
    const m = await call('GET', API + '/' + encodeURIComponent(name) + '/metrics');
    if (epoch !== state.epoch || state.selected !== name) return;
    renderMetrics(m);
    show('metrics-error', '');
  } catch (e) {
    if (accessProblem(e)) throw e;
    if (e.status !== 404) show('metrics-error', 'Metrics unavailable: ' + e.message);
  }
}

// ---- deployments table --------------------------------------------------

function renderList(list) {
  list = list.filter((d) => d && typeof d.name === 'string');
  list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  state.deployments = new Map(list.map((d) => [d.name, d]));
  const body = $('deployments-body');
  const rows = new Map();
  for (const tr of Array.from(body.rows)) rows.set(tr.dataset.name, tr);
  let prev = null;
  for (const d of list) {
    let tr = rows.get(d.name);
    if (tr) rows.delete(d.name); else tr = newRow(d.name);
    fillRow(tr, d);
    const want = prev ? prev.nextSibling : body.firstChild;
    if (want !== tr) body.insertBefore(tr, want);
    prev = tr;
  }
  for (const tr of rows.values()) tr.remove();
  $('deployments').hidden = list.length === 0;
  $('empty').hidden = list.length !== 0;
}

function newRow(name) {
  const tr = document.createElement('tr');
  tr.dataset.name = name;
  for (const c of ['c-name', 'c-model', 'c-class', 'c-cluster', 'c-status', 'c-since', 'c-replicas num', 'c-endpoint wrap']) {
    tr.appendChild(td(c));
  }
  const nameText = document.createElement('span');
  nameText.className = 'name';
  const tag = document.createElement('span');
  tag.className = 'tag';
  tag.hidden = true;
  tr.cells[0].append(nameText, tag);
  const badge = document.createElement('span');
  tr.cells[4].appendChild(badge);
  const code = document.createElement('code');
  tr.cells[7].appendChild(code);
  const actions = td('c-actions');
  const btn = document.createElement('button');
  btn.type = 'button';
  btn.dataset.action = 'details';
  btn.textContent = 'Details';
  actions.appendChild(btn);
  tr.appendChild(actions);
  return tr;
}

function fillRow(tr, d) {
  const c = tr.cells;
  setText(c[0].firstChild, d.name);
  const tag = c[0].lastChild;
  tag.hidden = d.source !== 'config';
  tag.textContent = 'config';
  tag.title = 'defined in the gateway configuration';
  setText(c[1], d.model_name);
  setText(c[2], d.model_class);
  setText(c[3], d.cluster);
  setBadge(c[4].firstChild, d.status);
  setText(c[5], ago(d.status_changed_at));
  c[5].title = d.status_changed_at || '';
  const healthy = healthyCount(d);
  setText(c[6], healthy + ' / ' + d.replicas);
  c[6].dataset.healthy = String(healthy);
  c[6].dataset.wanted = String(d.replicas);
  setText(c[7].firstChild, d.endpoint);
  tr.classList.toggle('selected', d.name === state.selected);
}

// ---- details view -------------------------------------------------------

function openDetails(name) {
  const d = state.deployments.get(name);
  if (!d) return;
  state.selected = name;
  state.scaleDirty = false;
  $('delete-confirm').hidden = true;
  show('action-error', '');
  show('action-note', '');
  show('metrics-error', '');
  clearMetrics();
  for (const tr of Array.from($('deployments-body').rows)) tr.classList.toggle('selected', tr.dataset.name === name);
  renderDetails(d);
  $('details').hidden = false;
  refreshNow();
}

function closeDetails() {
  state.selected = null;
  $('details').hidden = true;
  $('delete-confirm').hidden = true;
  for (const tr of Array.from($('deployments-body').rows)) tr.classList.remove('selected');
}

function renderDetails(d) {
  $('details').dataset.name = d.name;
  setText($('d-name'), d.name);
  setBadge($('d-status'), d.status);
  const res = d.cpus_per_replica + ' CPU, ' + d.gpus_per_replica + ' GPU per replica';
  setText($('d-summary'), d.model_name + ' · ' + d.model_class + ' on ' + d.cluster + ' · generation ' +
    d.generation + ' · ' + d.replicas + ' wanted · ' + res + ' · ' + d.status + ' since ' + ago(d.status_changed_at));
  setText($('d-endpoint'), d.endpoint);
  const input = $('scale-replicas');
  if (!state.scaleDirty && document.activeElement !== input) input.value = String(d.replicas);
  const rows = (d.replicas_status || []).map(replicaRow);
  $('replicas-body').replaceChildren(...rows);
}

function replicaRow(r) {
  const tr = document.createElement('tr');
  tr.dataset.id = String(r.id);
  const cells = {
    id: r.id, pid: r.pid || '', address: r.address, in_flight: r.in_flight, requests: r.requests,
    restarts: r.restarts, last_error: r.last_error, next_restart_at: until(r.next_restart_at),
  };
  for (const k of ['id', 'status', 'pid', 'address', 'in_flight', 'requests', 'restarts', 'last_error', 'next_restart_at']) {
    const cell = td('r-' + k.replace(/_/g, '-'));
    if (k === 'status') {
      const b = document.createElement('span');
      setBadge(b, r.status);
      cell.appendChild(b);
      if (r.draining) {
        const tag = document.createElement('span');
        tag.className = 'tag status-draining';
        tag.textContent = 'draining';
        cell.appendChild(tag);
      }
    } else {
      setText(cell, cells[k]);
    }
    if (k === 'last_error') cell.classList.add('wrap');
    if (k === 'next_restart_at' && r.next_restart_at) cell.title = r.next_restart_at;
    tr.appendChild(cell);
  }
  return tr;
}

// ---- metrics ------------------------------------------------------------

const METRIC_IDS = ['m-requests', 'm-rps', 'm-ttft-p50', 'm-ttft-p99', 'm-e2e-p50', 'm-e2e-p99', 'm-4xx', 'm-5xx', 'm-inflight', 'm-queued'];

function clearMetrics() {
  for (const id of METRIC_IDS) setText($(id), '');
  $('replica-metrics-body').replaceChildren();
  $('metrics-json').textContent = '';
}

function renderMetrics(m) {
  if (!m || typeof m !== 'object') return;
  const ttft = m.ttft || {};
  const e2e = m.e2e_latency || {};
  const n = typeof m.requests === 'number' ? m.requests : 0;
  if (m.window_seconds) setText($('m-window'), span(m.window_seconds).replace(/ 0s$/, ''));
  setText($('m-requests'), m.requests);
  setText($('m-rps'), num(m.requests_per_second, 3));
  setText($('m-ttft-p50'), ms(ttft.p50_ms, n));
  setText($('m-ttft-p99'), ms(ttft.p99_ms, n));
  setText($('m-e2e-p50'), ms(e2e.p50_ms, n));
  setText($('m-e2e-p99'), ms(e2e.p99_ms, n));
  setText($('m-4xx'), pct(m.error_rate_4xx));
  setText($('m-5xx'), pct(m.error_rate_5xx));
  setText($('m-inflight'), m.in_flight);
  setText($('m-queued'), m.queued);
  const rows = (Array.isArray(m.replicas) ? m.replicas : []).map((r) => {
    const tr = document.createElement('tr');
    tr.dataset.id = String(r.id);
    const status = td();
    const b = document.createElement('span');
    setBadge(b, r.status);
    status.appendChild(b);
    const cells = [td(), status, td('num'), td('num'), td('num')];
    setText(cells[0], r.id);
    setText(cells[2], r.in_flight);
    setText(cells[3], r.requests);
    setText(cells[4], num(r.requests_per_second, 3));
    tr.append(...cells);
    return tr;
  });
  $('replica-metrics-body').replaceChildren(...rows);
  $('metrics-json').textContent = JSON.stringify(m, null, 2);
}

// ---- actions ------------------------------------------------------------

// formError shows an API error next to a form and marks the field the
// envelope's param names.
function formError(form, errorId, e) {
  const access = accessProblem(e);
  if (access && e.status === 401) { signOut(access); return; }
  show(errorId, access || e.message);
  const field = (e.param || '').split('.')[0];
  if (!field || !form) return;
  for (const el of form.elements) {
    if (el.name === field) el.classList.add('invalid');
  }
}

function clearInvalid(form) {
  for (const el of form.elements) el.classList.remove('invalid');
}

function intField(id, field, spec) {
  const raw = $(id).value.trim();
  if (raw === '') return;
  const v = Number(raw);
  if (!Number.isInteger(v)) throw new APIError(0, field + ': must be a whole number', field);
  spec[field] = v;
}

function jsonField(id, field, spec) {
  const raw = $(id).value.trim();
  if (raw === '') return;
  let v;
  try { v = JSON.parse(raw); } catch (e) {
    throw new APIError(0, field + ': not valid JSON (' + e.message + ')', field);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new APIError(0, field + ': must be a JSON object', field);
  spec[field] = v;
}

function specFromForm() {
  const spec = {
    name: $('c-name').value.trim(),
    model_name: $('c-model-name').value.trim(),
    model_class: $('c-model-class').value,
  };
  const path = $('c-model-path').value.trim();
  if (path) spec.model_path = path;
  intField('c-replicas', 'replicas', spec);
  intField('c-cpus', 'cpus_per_replica', spec);
  intField('c-gpus', 'gpus_per_replica', spec);
  jsonField('c-engine', 'engine_config', spec);
  jsonField('c-health', 'health', spec);
  return spec;
}

async function createDeployment(ev) {
  ev.preventDefault();
  const form = $('create-form');
  clearInvalid(form);
  show('create-error', '');
  const button = $('create-submit');
  button.disabled = true;
  try {
    const st = await call('POST', API, specFromForm());
    form.reset();
    state.deployments.set(st.name, st);
    renderList(Array.from(state.deployments.values()));
    openDetails(st.name);
    show('action-note', 'Created ' + st.name + '; its replicas are starting.');
  } catch (e) {
    formError(form, 'create-error', e);
  } finally {
    button.disabled = false;
  }
}

async function scale(ev) {
  ev.preventDefault();
  const name = state.selected;
  const form = $('scale-form');
  clearInvalid(form);
  show('action-error', '');
  show('action-note', '');
  const v = Number($('scale-replicas').value);
  if (!name) return;
  if (!Number.isInteger(v) || v < 1) {
    formError(form, 'action-error', new APIError(0, 'replicas: must be a whole number of at least 1', 'replicas'));
    return;
  }
  $('scale-submit').disabled = true;
  try {
    const st = await call('PATCH', API + '/' + encodeURIComponent(name), { replicas: v });
    state.scaleDirty = false;
    show('action-note', 'Scaling ' + st.name + ' to ' + st.replicas + ' replicas.');
    refreshNow();
  } catch (e) {
    formError(form, 'action-error', e);
  } finally {
    $('scale-submit').disabled = false;
  }
}

function askDelete() {
  if (!state.selected) return;
  $('delete-name').textContent = state.selected;
  $('delete-confirm').hidden = false;
  show('action-error', '');
  $('delete-no').focus();
}

async function confirmDelete() {
  const name = state.selected;
  if (!name) return;
  $('delete-yes').disabled = true;
  try {
    await call('DELETE', API + '/' + encodeURIComponent(name));
    closeDetails();
    show('app-error', '');
    refreshNow();
  } catch (e) {
    $('delete-confirm').hidden = true;
    formError(null, 'action-error', e);
  } finally {
    $('delete-yes').disabled = false;
  }
}

// ---- wiring -------------------------------------------------------------

function init() {
  $('login-form').addEventListener('submit', signIn);
  $('sign-out').addEventListener('click', () => signOut(''));
  $('create-form').addEventListener('submit', createDeployment);
  $('scale-form').addEventListener('submit', scale);
  $('scale-replicas').addEventListener('input', () => { state.scaleDirty = true; });
  $('delete-start').addEventListener('click', askDelete);
  $('delete-yes').addEventListener('click', confirmDelete);
  $('delete-no').addEventListener('click', () => { $('delete-confirm').hidden = true; });
  $('d-close').addEventListener('click', closeDetails);
  $('deployments-body').addEventListener('click', (ev) => {
    const btn = ev.target.closest('button[data-action="details"]');
    if (btn) openDetails(btn.closest('tr').dataset.name);
  });
  const key = readKey();
  if (key) {
    state.key = key;
    showApp();
    refresh();
  } else {
    showLogin('');
  }
}

init();
