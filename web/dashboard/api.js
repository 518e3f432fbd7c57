// raygw dashboard: the admin API client and value formatting, with no
// page state. Server text is returned as plain strings for textContent.

const FETCH_TIMEOUT_MS = 15000;

export class APIError extends Error {
  constructor(status, message, param) {
    super(message);
    this.status = status;
    this.param = typeof param === 'string' ? param : '';
  }
}

// api calls the gateway with the admin key and returns the decoded JSON, or throws an APIError
// carrying the OpenAI error envelope's message and param.
export async function api(key, method, path, body) {
  const headers = { Authorization: 'Bearer ' + key, Accept: 'application/json' };
  const init = {
    method, headers, cache: 'no-store', credentials: 'omit', redirect: 'error',
    signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
  };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    const why = e && e.name === 'TimeoutError' ? 'the gateway did not answer in time' : 'the gateway cannot be reached';
    throw new APIError(0, 'Request failed: ' + why + '.');
  }
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (!resp.ok) {
    const env = data && typeof data === 'object' ? data.error : null;
    const msg = env && typeof env.message === 'string' ? env.message : 'HTTP ' + resp.status + ' ' + resp.statusText;
    throw new APIError(resp.status, msg, env && env.param);
  }
  return data;
}

// accessProblem explains why the admin API refused us, or returns '' when
// the error is not about access.
export function accessProblem(e) {
  if (e.status === 401 && /no api keys are configured/i.test(e.message)) {
    return 'The admin API is not configured on this gateway: set RAY_ADMIN_API_KEYS ' +
      '(or the variable RAY_ADMIN_API_KEY_ENV names) and restart raygw.';
  }
  if (e.status === 401) return 'The gateway refused this admin key (401): ' + e.message;
  if (e.status === 403) return 'This key may not use the admin API (403): ' + e.message;
  return '';
}

export function listProblem(e) {
  if (e.status === 404) {
    return 'This address does not serve the raygw deployments API (404): ' + e.message;
  }
  return accessProblem(e) || e.message;
}


export function ago(iso) {
  const t = Date.parse(iso);
  if (!iso || Number.isNaN(t) || t <= 0) return '';
  return span((Date.now() - t) / 1000) + ' ago';
}

export function until(iso) {
  const t = Date.parse(iso);
  if (!iso || Number.isNaN(t)) return '';
  const s = (t - Date.now()) / 1000;
  return s <= 0 ? 'now' : 'in ' + span(s);
}

export function span(sec) {
  sec = Math.max(0, Math.round(sec));
  if (sec < 60) return sec + 's';
  if (sec < 3600) return Math.floor(sec / 60) + 'm ' + (sec % 60) + 's';
  if (sec < 86400) return Math.floor(sec / 3600) + 'h ' + Math.floor((sec % 3600) / 60) + 'm';
  return Math.floor(sec / 86400) + 'd ' + Math.floor((sec % 86400) / 3600) + 'h';
}


export function num(v, digits) {
  return typeof v === 'number' && Number.isFinite(v) ? v.toFixed(digits) : '';
}

export function ms(v, requests) {
  return requests > 0 && typeof v === 'number' ? num(v, 1) + ' ms' : '';
}

export function pct(v) {
  return typeof v === 'number' && Number.isFinite(v) ? (v * 100).toFixed(1) + ' %' : '';
}
