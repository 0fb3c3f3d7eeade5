package admin

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
)

const (
	testToken    = "0123456789abcdef0123456789abcdef"
	testUser     = "ops"
	testPassword = "correct horse battery staple"
)

// countingTypes counts resets, which a test server's goroutines make.
type countingTypes struct{ resets atomic.Int32 }

func (c *countingTypes) Types() TypesResponse { return TypesResponse{TypeKey: "digest"} }
func (c *countingTypes) ResetTypes()          { c.resets.Add(1) }

// guarded is a handler with every mutating endpoint, behind a guard, and counts of what
// the endpoints did.
type guarded struct {
	types     countingTypes
	reloads   atomic.Int32
	handovers atomic.Int32
	handler   http.Handler
}

func newGuarded(t *testing.T, protectReads bool) *guarded {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(testPassword), bcrypt.MinCost)
	require.NoError(t, err)
	guard, err := NewGuard(GuardConfig{Token: []byte(testToken), Users: map[string]string{testUser: string(hash)}, ProtectReads: protectReads})
	require.NoError(t, err)
	g := &guarded{}
	g.handler = Handler(Sources{
		Gatherer: prometheus.NewRegistry(),
		Ready:    CheckFunc(func(context.Context) error { return nil }),
		Types:    &g.types,
		Queue:    fakeQueue{},
		Reload:   func() error { g.reloads.Add(1); return nil },
		Handover: func(context.Context) (HandoverResponse, error) {
			g.handovers.Add(1)
			return HandoverResponse{Status: "handed_over"}, nil
		},
		Pprof: true,
		Guard: guard,
	})
	return g
}

// done is how many times the mutating endpoints ran.
func (g *guarded) done() int32 { return g.types.resets.Load() + g.reloads.Load() + g.handovers.Load() }

// credentials are what a request sends.
type credentials struct {
	name  string
	apply func(r *http.Request)
}

var (
	none        = credentials{"none", func(*http.Request) {}}
	rightBearer = credentials{"right bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testToken) }}
	rightBasic  = credentials{"right user", func(r *http.Request) { r.SetBasicAuth(testUser, testPassword) }}
	wrongOnes   = []credentials{
		{"wrong bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testToken[1:]+"x") }},
		{"token as basic password", func(r *http.Request) { r.SetBasicAuth(testUser, testToken) }},
		{"wrong password", func(r *http.Request) { r.SetBasicAuth(testUser, testPassword+"!") }},
		{"unknown user", func(r *http.Request) { r.SetBasicAuth("root", testPassword) }},
		{"password as bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testPassword) }},
		{"empty bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer") }},
		{"other scheme", func(r *http.Request) { r.Header.Set("Authorization", "Digest username=\"ops\"") }},
		{"bad basic", func(r *http.Request) { r.Header.Set("Authorization", "Basic !!!") }},
	}
)

// call sends method path to base with c's credentials.
func call(t *testing.T, client *http.Client, base, method, path string, c credentials) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, nil)
	require.NoError(t, err)
	c.apply(req)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// mutating are the admin API's endpoints that change the proxy.
var mutating = []string{"/api/v1/types/reset", "/-/reload", "/-/handover"}

// TestGuardOverHTTPAndHTTPS: every endpoint that changes the proxy answers 401 without
// credentials and with wrong ones, without running, and runs with a right token or user;
// over plain HTTP and over HTTPS alike.
func TestGuardOverHTTPAndHTTPS(t *testing.T) {
	for _, transport := range []string{"http", "https"} {
		t.Run(transport, func(t *testing.T) {
			g := newGuarded(t, false)
			srv := httptest.NewUnstartedServer(g.handler)
			if transport == "https" {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			defer srv.Close()
			require.True(t, strings.HasPrefix(srv.URL, transport+"://"), srv.URL)
			client := srv.Client()

			for _, path := range mutating {
				resp, body := call(t, client, srv.URL, http.MethodPost, path, none)
				assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "POST %s without credentials", path)
				assert.ElementsMatch(t, []string{`Basic realm="gatekeeper", charset="UTF-8"`, `Bearer realm="gatekeeper"`},
					resp.Header.Values("WWW-Authenticate"), path)
				assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
				var refusal map[string]string
				require.NoError(t, json.Unmarshal([]byte(body), &refusal), body)
				assert.Equal(t, "error", refusal["status"])
				assert.Equal(t, "this endpoint changes the proxy: send the bearer token of admin.auth.bearer_token_file "+
					"(Authorization: Bearer TOKEN) or the password of a user of admin.auth.users (basic authentication)", refusal["error"])
				for _, c := range wrongOnes {
					resp, body := call(t, client, srv.URL, http.MethodPost, path, c)
					assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "POST %s with %s", path, c.name)
					assert.Contains(t, body, "the credentials were refused", "POST %s with %s", path, c.name)
				}
			}
			require.Equal(t, int32(0), g.done(), "a refused request ran its endpoint")

			for _, c := range []credentials{rightBearer, rightBasic, rightBasic} { // the second right user is remembered
				for _, path := range mutating {
					resp, body := call(t, client, srv.URL, http.MethodPost, path, c)
					assert.Equal(t, http.StatusOK, resp.StatusCode, "POST %s with %s: %s", path, c.name, body)
				}
			}
			assert.Equal(t, int32(3), g.types.resets.Load())
			assert.Equal(t, int32(3), g.reloads.Load())
			assert.Equal(t, int32(3), g.handovers.Load())

			// Remembering a right password lets nothing else through.
			resp, _ := call(t, client, srv.URL, http.MethodPost, "/-/reload", wrongOnes[2])
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a wrong password after a right one")
		})
	}
}

// TestGuardCoversRoutesAddedLater: the guard stands before the routes, so that a POST
// route added later (or one that does not exist) and every method but GET and HEAD need
// credentials without a word in the route.
func TestGuardCoversRoutesAddedLater(t *testing.T) {
	g := newGuarded(t, false)
	for _, tt := range []struct{ method, path string }{
		{http.MethodPost, "/api/v1/backends/pause-writes"},
		{http.MethodPost, "/api/v1/backends/resume-writes"},
		{http.MethodPut, "/api/v1/types"},
		{http.MethodDelete, "/api/v1/types"},
		{http.MethodPatch, "/-/reload"},
		{http.MethodOptions, "/-/handover"},
		{http.MethodPost, "/healthz"},
		{http.MethodPost, "/metrics"},
	} {
		code, _ := get(t, g.handler, tt.method, tt.path)
		assert.Equal(t, http.StatusUnauthorized, code, "%s %s", tt.method, tt.path)
	}
	// With credentials the route answers as it would: 404 for none.
	req := httptest.NewRequest(http.MethodPost, "/api/v1/backends/pause-writes", nil)
	rightBearer.apply(req)
	rec := httptest.NewRecorder()
	g.handler.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusNotFound, rec.Code)
}

// TestGuardReads: reads stay open unless protect_reads, but the profiles need credentials
// whenever a guard is set; /healthz and /readyz never do.
func TestGuardReads(t *testing.T) {
	tests := []struct {
		path string
		// open and openProtected: whether it answers without credentials, without
		// protect_reads and with it.
		open, openProtected bool
	}{
		{"/metrics", true, false},
		{"/healthz", true, true},
		{"/readyz", true, true},
		{"/api/v1/types", true, false},
		{"/api/v1/queue", true, false},
		{"/debug/pprof/", false, false},
		{"/debug/pprof/cmdline", false, false},
	}
	for _, protect := range []bool{false, true} {
		g := newGuarded(t, protect)
		for _, tt := range tests {
			want := tt.open
			if protect {
				want = tt.openProtected
			}
			for _, method := range []string{http.MethodGet, http.MethodHead} {
				code, _ := get(t, g.handler, method, tt.path)
				if want {
					assert.Equal(t, http.StatusOK, code, "%s %s, protect_reads %v", method, tt.path, protect)
				} else {
					assert.Equal(t, http.StatusUnauthorized, code, "%s %s, protect_reads %v", method, tt.path, protect)
				}
			}
			for _, c := range []credentials{rightBearer, rightBasic} {
				req := httptest.NewRequest(http.MethodGet, tt.path, nil)
				c.apply(req)
				rec := httptest.NewRecorder()
				g.handler.ServeHTTP(rec, req)
				assert.Equal(t, http.StatusOK, rec.Code, "GET %s with %s, protect_reads %v", tt.path, c.name, protect)
			}
		}
		if protect {
			_, body := get(t, g.handler, http.MethodGet, "/api/v1/types")
			assert.Contains(t, body, "this endpoint needs credentials (admin.auth.protect_reads)")
		}
	}
}

// TestGuardAsksForWhatIsSet: the challenge and the message name only the credentials
// configured, and a user name matches in any letter case, as the configuration file's
// keys do.
func TestGuardAsksForWhatIsSet(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte(testPassword), bcrypt.MinCost)
	require.NoError(t, err)
	usersOnly, err := NewGuard(GuardConfig{Users: map[string]string{"Ops": string(hash)}})
	require.NoError(t, err)
	tokenOnly, err := NewGuard(GuardConfig{Token: []byte(testToken)})
	require.NoError(t, err)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	tests := []struct {
		name      string
		guard     *Guard
		challenge string
		how       string
		refused   credentials
		let       credentials
	}{
		{"users", usersOnly, `Basic realm="gatekeeper", charset="UTF-8"`, "send the password of a user of admin.auth.users (basic authentication)",
			rightBearer, credentials{"upper-case user", func(r *http.Request) { r.SetBasicAuth("OPS", testPassword) }}},
		{"token", tokenOnly, `Bearer realm="gatekeeper"`, "send the bearer token of admin.auth.bearer_token_file (Authorization: Bearer TOKEN)",
			rightBasic, credentials{"lower-case scheme", func(r *http.Request) { r.Header.Set("Authorization", "bearer "+testToken) }}},
	}
	for _, tt := range tests {
		h := tt.guard.Wrap(ok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/-/reload", nil))
		assert.Equal(t, http.StatusUnauthorized, rec.Code, tt.name)
		assert.Equal(t, []string{tt.challenge}, rec.Result().Header.Values("WWW-Authenticate"), tt.name)
		assert.Contains(t, rec.Body.String(), tt.how, tt.name)

		req := httptest.NewRequest(http.MethodPost, "/-/reload", nil)
		tt.refused.apply(req)
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusUnauthorized, rec.Code, "%s: %s", tt.name, tt.refused.name)

		req = httptest.NewRequest(http.MethodPost, "/-/reload", nil)
		tt.let.apply(req)
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusOK, rec.Code, "%s: %s", tt.name, tt.let.name)
	}
}

func TestNewGuardRefuses(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte(testPassword), bcrypt.MinCost)
	require.NoError(t, err)
	tests := []struct {
		name string
		c    GuardConfig
		want string
	}{
		{"nothing", GuardConfig{ProtectReads: true}, "needs a bearer token or a user"},
		{"plain password", GuardConfig{Users: map[string]string{"ops": testPassword}}, `admin user "ops": the password is not a bcrypt hash`},
		{"colon", GuardConfig{Users: map[string]string{"a:b": string(hash)}}, `admin user "a:b"`},
	}
	for _, tt := range tests {
		_, err := NewGuard(tt.c)
		if assert.Error(t, err, tt.name) {
			assert.Contains(t, err.Error(), tt.want, tt.name)
		}
	}
}
