package callback

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAllowListMatching(t *testing.T) {
	a, err := NewAllowList([]string{"callback.example", "*.trusted.example", " Hooks.Example. ", "", "203.0.113.7", "[2001:db8::1]"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		want bool
	}{
		{"callback.example", true},
		{"CALLBACK.example.", true},
		{"hooks.example", true},
		{"a.trusted.example", true},
		{"a.b.trusted.example", true},
		{"trusted.example", false}, // *.suffix does not match the apex
		{"eviltrusted.example", false},
		{"trusted.example.evil", false},
		{"callback.example.evil", false},
		{"x.callback.example", false}, // exact names have no subdomains
		{"203.0.113.7", true},
		{"[2001:db8::1]", true},
		{"2001:db8:0::1", true},
		{"203.0.113.8", false},
		{"", false},
		{"a..trusted.example", false},
		{"-a.trusted.example", false},
		{"a b.trusted.example", false},
		{"fe80::1%eth0", false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			if got := a.Allows(tt.host); got != tt.want {
				t.Errorf("Allows(%q) = %v, want %v", tt.host, got, tt.want)
			}
		})
	}
}

func TestAllowListBadPatterns(t *testing.T) {
	for _, p := range []string{"*", "*.", "a.*.b", "*example.com", "**.x", "*.10.0.0.1", "exa mple.com", "a/b"} {
		t.Run(p, func(t *testing.T) {
			if _, err := NewAllowList([]string{p}); !errors.Is(err, ErrBadPattern) {
				t.Errorf("NewAllowList(%q) = %v, want ErrBadPattern", p, err)
			}
		})
	}
}

func TestEmptyAllowListAllowsNothing(t *testing.T) {
	a, err := NewAllowList(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Empty() || a.Allows("callback.example") {
		t.Fatal("an empty list must allow nothing")
	}
	if _, err := (Policy{Allow: a}).CheckURL("https://callback.example/x"); !errors.Is(err, ErrDisabled) {
		t.Fatalf("CheckURL with empty list = %v, want ErrDisabled", err)
	}
}

func TestControlRefusesPrivateAddresses(t *testing.T) {
	deny := Control(false)
	allow := Control(true)
	tests := []struct {
		addr    string
		blocked bool
	}{
		{"127.0.0.1:80", true},
		{"127.8.9.1:443", true},
		{"10.1.2.3:443", true},
		{"172.16.0.1:443", true},
		{"192.168.1.1:443", true},
		{"169.254.169.254:80", true}, // cloud metadata
		{"100.64.0.1:443", true},     // CGNAT
		{"0.0.0.0:80", true},
		{"224.0.0.1:80", true},
		{"255.255.255.255:80", true},
		{"[::1]:80", true},
		{"[::]:80", true},
		{"[::ffff:127.0.0.1]:80", true},
		{"[::ffff:10.0.0.1]:80", true},
		{"[::ffff:169.254.169.254]:80", true},
		{"[fe80::1]:80", true},
		{"[fc00::1]:80", true},
		{"[ff02::1]:80", true},
		{"[64:ff9b::a00:1]:80", true}, // NAT64 of 10.0.0.1
		{"not-an-address", true},
		{"93.184.216.34:443", false},
		{"8.8.8.8:53", false},
		{"[2606:4700:4700::1111]:443", false},
		{"[::ffff:8.8.8.8]:443", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			err := deny("tcp", tt.addr, nil)
			if tt.blocked != errors.Is(err, ErrBlockedAddress) {
				t.Errorf("Control(false)(%q) = %v, blocked want %v", tt.addr, err, tt.blocked)
			}
			if err := allow("tcp", tt.addr, nil); err != nil {
				t.Errorf("Control(true)(%q) = %v, want nil", tt.addr, err)
			}
		})
	}
}

func TestBlockedZoneAndInvalid(t *testing.T) {
	if !Blocked(netip.Addr{}) || !Blocked(netip.MustParseAddr("fe80::1%eth0")) {
		t.Fatal("invalid and zoned addresses must be blocked")
	}
}

// TestRealRequestToLoopbackIsRefused dials a real loopback server by name
// and by address: with private networks off the connection never happens.
func TestRealRequestToLoopbackIsRefused(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	c := NewClient(5*time.Second, false)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{srv.URL + "/hook", "http://localhost:" + u.Port() + "/hook"} {
		_, err := c.Post(context.Background(), target, "job_x", []byte(`{}`), "s")
		if !errors.Is(err, ErrBlockedAddress) {
			t.Errorf("Post(%s) = %v, want ErrBlockedAddress", target, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback server got %d requests, want 0", n)
	}
	ok := NewClient(5*time.Second, true)
	status, err := ok.Post(context.Background(), srv.URL+"/hook", "job_x", []byte(`{}`), "s")
	if err != nil || status != 200 || hits.Load() != 1 {
		t.Fatalf("with private allowed: status %d err %v hits %d", status, err, hits.Load())
	}
}

func TestPostSignsAndDoesNotFollowRedirects(t *testing.T) {
	var gotSig, gotID string
	var redirected atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
		gotSig, gotID = r.Header.Get(SignatureHeader), r.Header.Get(JobIDHeader)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/target", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/target", func(w http.ResponseWriter, r *http.Request) { redirected.Add(1) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := NewClient(5*time.Second, true)
	body := []byte(`{"id":"job_a"}`)
	if _, err := c.Post(context.Background(), srv.URL+"/hook", "job_a", body, "sekrit"); err != nil {
		t.Fatal(err)
	}
	if !Verify("sekrit", body, gotSig) || Verify("other", body, gotSig) || gotID != "job_a" {
		t.Fatalf("signature %q / id %q do not verify", gotSig, gotID)
	}
	status, err := c.Post(context.Background(), srv.URL+"/moved", "job_a", body, "")
	if !errors.Is(err, ErrRedirect) || status != http.StatusTemporaryRedirect || redirected.Load() != 0 {
		t.Fatalf("redirect: status %d err %v followed %d", status, err, redirected.Load())
	}
}

func TestCheckURL(t *testing.T) {
	a, err := NewAllowList([]string{"callback.example", "*.trusted.example", "127.0.0.1", "10.0.0.5"})
	if err != nil {
		t.Fatal(err)
	}
	public := Policy{Allow: a}
	private := Policy{Allow: a, AllowPrivate: true}
	tests := []struct {
		name   string
		p      Policy
		url    string
		target error // nil: accepted
	}{
		{"https allowed", public, "https://callback.example/hook?x=1", nil},
		{"suffix", public, "https://a.trusted.example:8443/hook", nil},
		{"http refused on public", public, "http://callback.example/hook", ErrInvalidURL},
		{"http allowed with private", private, "http://callback.example/hook", nil},
		{"ftp refused", private, "ftp://callback.example/hook", ErrInvalidURL},
		{"host not listed", public, "https://evil.example/hook", ErrHostNotAllowed},
		{"credentials", public, "https://u:p@callback.example/hook", ErrInvalidURL},
		{"fragment", public, "https://callback.example/hook#x", ErrInvalidURL},
		{"relative", public, "/hook", ErrInvalidURL},
		{"opaque", public, "https:callback.example", ErrInvalidURL},
		{"port zero", public, "https://callback.example:0/", ErrInvalidURL},
		{"loopback literal listed but private off", public, "https://127.0.0.1/hook", ErrBlockedAddress},
		{"private literal listed but private off", public, "https://10.0.0.5/hook", ErrBlockedAddress},
		{"loopback literal with private on", private, "http://127.0.0.1:9/hook", nil},
		{"unlisted literal", private, "http://127.0.0.2/hook", ErrHostNotAllowed},
		{"too long", public, "https://callback.example/" + string(make([]byte, MaxURLLen)), ErrInvalidURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.p.CheckURL(tt.url)
			if tt.target == nil && err != nil || tt.target != nil && !errors.Is(err, tt.target) {
				t.Errorf("CheckURL(%q) = %v, want %v", tt.url, err, tt.target)
			}
		})
	}
}
