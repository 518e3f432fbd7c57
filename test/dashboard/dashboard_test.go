package dashboard_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/raygw/raygw/internal/testenv"
)

const (
	adminKey = "dash-admin-key-0123456789abcdef"
	wrongKey = "dash-wrong-key-0123456789abcdef"
	depName  = "dash"
	depModel = "dash-model"
)

// status is the part of a deployment's API status the test reads.
type status struct {
	Name     string `json:"name"`
	Replicas int    `json:"replicas"`
	Status   string `json:"status"`
}

// call sends one request to the gateway and returns its status and body.
func call(t *testing.T, method, url, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func getDeployment(t *testing.T, base string) (status, error) {
	code, body := call(t, "GET", base+"/api/v1/deployments/"+depName, adminKey, "")
	if code != http.StatusOK {
		return status{}, httpStatusError(code, body)
	}
	var st status
	err := json.Unmarshal([]byte(body), &st)
	return st, err
}

// TestDashboardInChromium signs in, creates, inspects, scales, serves and
// deletes a deployment through the dashboard in a real browser, checking the
// control plane's answers through the REST API.
func TestDashboardInChromium(t *testing.T) {
	chromiumPath(t) // fail before starting anything when the browser is missing
	env := testenv.GatewayEnv(t)
	env["RAY_ADMIN_API_KEYS"] = adminKey
	env["RAY_LLAMA_CPP_PARALLEL"] = "1"
	g := testenv.StartGateway(t, env)
	b := newBrowser(t, g.URL, 4*time.Minute)

	signIn(t, b)
	refusalShown(t, b, g.URL)
	createThroughForm(t, b, testenv.Model(t))
	inspectDetails(t, b)
	scaleToTwo(t, b, g.URL)
	seeRequests(t, b, g.URL)
	deleteThroughUI(t, b, g.URL)

	b.do("sign out", chromedp.Click(chromedp.ID("sign-out")))
	b.waitFor("login prompt after sign-out",
		`!document.getElementById('login').hidden && sessionStorage.getItem('raygw.adminKey') === null`, 5*time.Second)
	b.checkClean(adminKey, wrongKey)
}

func signIn(t *testing.T, b *browser) {
	t.Helper()
	b.do("open the dashboard", chromedp.Navigate(b.origin+"/dashboard"))
	b.waitFor("the key prompt", `!document.getElementById('login').hidden && document.getElementById('app').hidden`, 10*time.Second)
	if got := b.eval(`location.pathname`); got != "/dashboard/" {
		t.Fatalf("/dashboard landed on %q, want /dashboard/", got)
	}
	if typ := b.eval(`document.getElementById('admin-key').type`); typ != "password" {
		t.Fatalf("the key field is of type %q, want password", typ)
	}

	b.do("submit a wrong key",
		chromedp.SendKeys(chromedp.ID("admin-key"), wrongKey),
		chromedp.Click(chromedp.ID("login-submit")))
	b.waitFor("the wrong-key error",
		`(e => !e.hidden && e.textContent.includes('refused this admin key') && e.textContent.includes('Invalid API key'))(document.getElementById('login-error'))`,
		10*time.Second)
	if got := b.eval(`String(sessionStorage.getItem('raygw.adminKey'))`); got != "null" {
		t.Fatalf("a refused key was stored: %q", got)
	}

	b.do("submit the admin key",
		chromedp.Evaluate[chromedp.Void](`document.getElementById('admin-key').value = ''`),
		chromedp.SendKeys(chromedp.ID("admin-key"), adminKey),
		chromedp.Click(chromedp.ID("login-submit")))
	b.waitFor("the deployments table",
		`document.getElementById('login').hidden && !document.getElementById('app').hidden
		 && document.getElementById('deployments').hidden === (document.getElementById('deployments-body').rows.length === 0)`,
		10*time.Second)
	if got := b.eval(`String(sessionStorage.getItem('raygw.adminKey')) + '|' + localStorage.length`); got != adminKey+"|0" {
		t.Fatalf("storage = %q, want the key in sessionStorage only", got)
	}
}

func createThroughForm(t *testing.T, b *browser, model string) {
	t.Helper()
	b.do("fill the create form",
		chromedp.Click(chromedp.CSS("#create-panel > summary")),
		chromedp.SendKeys(chromedp.ID("c-name"), depName),
		chromedp.SendKeys(chromedp.ID("c-model-name"), depModel),
		chromedp.SendKeys(chromedp.ID("c-model-path"), "/nonexistent/<img src=x id=xss>.gguf"),
		chromedp.SetValue(chromedp.ID("c-cpus"), "1"),
		chromedp.SetValue(chromedp.ID("c-engine"), `{"ctx_size": 512, "parallel": 2}`),
		chromedp.SetValue(chromedp.ID("c-health"), `{"interval_ms": 200, "timeout_ms": 500, "backoff_base_ms": 200, "start_timeout_ms": 30000}`),
		chromedp.Click(chromedp.ID("create-submit")))
	b.waitFor("the API's validation error next to the form",
		`(e => !e.hidden && e.textContent.includes('model_path'))(document.getElementById('create-error'))
		 && document.getElementById('c-model-path').classList.contains('invalid')`, 10*time.Second)
	// The error echoes the path: it must show as text, not become markup.
	if got := b.eval(`(e => e.textContent.includes('<img src=x id=xss>') + '|' + e.children.length + '|' + (document.getElementById('xss') === null))(document.getElementById('create-error'))`); got != "true|0|true" {
		t.Fatalf("the echoed path was not rendered as plain text: %s", got)
	}

	b.do("create with the real model",
		chromedp.SetValue(chromedp.ID("c-model-path"), model),
		chromedp.Click(chromedp.ID("create-submit")))
	row := `document.querySelector('#deployments-body tr[data-name=` + jsString(depName) + `]')`
	b.waitFor("the new row", row+` !== null && document.getElementById('create-error').hidden`, 10*time.Second)
	b.waitFor("the deployment running with 1 healthy replica",
		`(r => r && r.querySelector('.c-status .badge').dataset.status === 'running'
		        && r.querySelector('.c-status .badge').classList.contains('status-running')
		        && r.querySelector('.c-replicas').textContent === '1 / 1')(`+row+`)`, 60*time.Second)
	cells := b.eval(`[` + row + `.querySelector('.c-name .name')].concat(Array.from(` + row + `.cells).slice(1, 4)).map(c => c.textContent).join('|')`)
	if cells != depName+"|"+depModel+"|llama.cpp|local" {
		t.Fatalf("row cells %q", cells)
	}
	if ep := b.eval(row + `.querySelector('.c-endpoint').textContent`); ep != b.origin+"/d/"+depName+"/v1" {
		t.Fatalf("endpoint %q, want %s/d/%s/v1", ep, b.origin, depName)
	}
}

func inspectDetails(t *testing.T, b *browser) {
	t.Helper()
	b.do("close and reopen the details",
		chromedp.Click(chromedp.ID("d-close")),
		chromedp.Click(chromedp.CSS(`#deployments-body tr[data-name="`+depName+`"] button[data-action="details"]`)))
	b.waitFor("details with 1 healthy replica and a pid",
		`!document.getElementById('details').hidden
		 && document.getElementById('d-name').textContent === `+jsString(depName)+`
		 && (rows => rows.length === 1 && rows[0].querySelector('.r-status .badge').dataset.status === 'healthy'
		             && Number(rows[0].querySelector('.r-pid').textContent) > 0
		             && rows[0].querySelector('.r-address').textContent.startsWith('http://127.0.0.1:'))(document.querySelectorAll('#replicas-body tr'))
		 && document.getElementById('m-requests').textContent === '0'
		 && document.getElementById('metrics-json').textContent.includes(`+jsString(`"deployment": "`+depName+`"`)+`)`,
		10*time.Second)
}

func scaleToTwo(t *testing.T, b *browser, base string) {
	t.Helper()
	// Set the field and mark it edited in one page task, so a refresh in
	// between cannot put the old count back; the click is a real one.
	b.do("scale to 2",
		chromedp.Evaluate[chromedp.Void](`(e => { e.value = '2'; e.dispatchEvent(new Event('input', {bubbles: true})); })(document.getElementById('scale-replicas'))`),
		chromedp.Click(chromedp.ID("scale-submit")))
	b.waitFor("the scale note", `document.getElementById('action-note').textContent.includes('to 2 replicas')`, 10*time.Second)
	st, err := getDeployment(t, base)
	if err != nil || st.Replicas != 2 {
		t.Fatalf("after scaling in the UI the API says %+v, %v; want replicas 2", st, err)
	}
	b.waitFor("2 healthy replicas in the table and the details",
		`(r => r && r.querySelector('.c-replicas').textContent === '2 / 2'
		        && r.querySelector('.c-status .badge').dataset.status === 'running')(document.querySelector('#deployments-body tr[data-name="`+depName+`"]'))
		 && Array.from(document.querySelectorAll('#replicas-body tr')).filter(tr => tr.querySelector('.r-status .badge').dataset.status === 'healthy').length === 2
		 && document.querySelectorAll('#replica-metrics-body tr').length === 2`, 60*time.Second)
	b.screenshot("scaled")
}

func seeRequests(t *testing.T, b *browser, base string) {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"Hi"}],"max_tokens":4}`, depModel)
	if code, out := call(t, "POST", base+"/d/"+depName+"/v1/chat/completions", "", body); code != http.StatusOK {
		t.Fatalf("chat completion: %d %s", code, out)
	}
	b.waitFor("the request in the details' metrics",
		`Number(document.getElementById('m-requests').textContent) >= 1
		 && Array.from(document.querySelectorAll('#replicas-body .r-requests')).reduce((n, c) => n + Number(c.textContent), 0) >= 1
		 && document.getElementById('m-e2e-p50').textContent.endsWith(' ms')`, 10*time.Second)
	b.screenshot("served")
}

func deleteThroughUI(t *testing.T, b *browser, base string) {
	t.Helper()
	b.do("ask to delete", chromedp.Click(chromedp.ID("delete-start")))
	b.waitFor("the confirm step",
		`!document.getElementById('delete-confirm').hidden && document.getElementById('delete-name').textContent === `+jsString(depName),
		5*time.Second)
	if _, err := getDeployment(t, base); err != nil {
		t.Fatalf("the deployment went away before the confirmation: %v", err)
	}
	b.do("confirm", chromedp.Click(chromedp.ID("delete-yes")))
	b.waitFor("the details closed", `document.getElementById('details').hidden`, 10*time.Second)

	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := getDeployment(t, base)
		if errors.Is(err, errNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deployment is still there 60s after the delete: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.waitFor("the row gone", `document.querySelector('#deployments-body tr[data-name="`+depName+`"]') === null`, 10*time.Second)
}

// refusalShown scales the config-defined deployment (the gateway's own
// model) through the UI: the API refuses it with 409, and the page must show
// the API's message.
func refusalShown(t *testing.T, b *browser, base string) {
	t.Helper()
	name := b.eval(`(r => r ? r.dataset.name : '')(Array.from(document.querySelectorAll('#deployments-body tr')).find(tr => !tr.querySelector('.c-name .tag').hidden))`)
	if name == "" {
		t.Log("no config-defined deployment is listed; the 409 message is not exercised")
		return
	}
	row := `#deployments-body tr[data-name=` + jsString(name) + `]`
	wanted := b.eval(`document.querySelector(` + jsString(row) + `).querySelector('.c-replicas').dataset.wanted`)
	code, body := call(t, "PATCH", base+"/api/v1/deployments/"+name, adminKey, `{"replicas":`+wanted+`}`)
	var env struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if code != http.StatusConflict || json.Unmarshal([]byte(body), &env) != nil || env.Error.Message == "" {
		t.Fatalf("PATCH of the config-defined deployment %s: %d %s; want 409 with a message", name, code, body)
	}
	b.do("scale the config-defined deployment",
		chromedp.Click(chromedp.CSS(row+` button[data-action="details"]`)))
	b.waitFor("its details", `!document.getElementById('details').hidden && document.getElementById('d-name').textContent === `+jsString(name)+
		` && document.getElementById('scale-replicas').value === `+jsString(wanted), 10*time.Second)
	b.do("submit the scale", chromedp.Click(chromedp.ID("scale-submit")))
	b.waitFor("the API's 409 message", `(e => !e.hidden && e.textContent === `+jsString(env.Error.Message)+`)(document.getElementById('action-error'))`, 10*time.Second)
	b.do("close the details", chromedp.Click(chromedp.ID("d-close")))
}

// TestDashboardWithoutAdminKeys signs in to a gateway with no admin key
// configured: the page must say that the admin API is not configured.
func TestDashboardWithoutAdminKeys(t *testing.T) {
	chromiumPath(t)
	env := testenv.GatewayEnv(t)
	env["RAY_LLAMA_CPP_PARALLEL"] = "1"
	g := testenv.StartGateway(t, env)
	b := newBrowser(t, g.URL, 2*time.Minute)

	b.do("open the dashboard and submit a key",
		chromedp.Navigate(g.URL+"/dashboard/"),
		chromedp.SendKeys(chromedp.ID("admin-key"), adminKey),
		chromedp.Click(chromedp.ID("login-submit")))
	b.waitFor("the not-configured message",
		`(e => !e.hidden && e.textContent.includes('admin API is not configured') && e.textContent.includes('RAY_ADMIN_API_KEYS'))(document.getElementById('login-error'))
		 && document.getElementById('app').hidden && sessionStorage.length === 0`, 10*time.Second)
	b.checkClean(adminKey)
}
