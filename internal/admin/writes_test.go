package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fakeWrites pauses and resumes as its fields say.
type fakeWrites struct {
	paused   bool
	pauseErr error
	timeout  time.Duration
}

func (f *fakeWrites) Topology() any { return map[string]any{"state": "ok", "paused": f.paused} }

func (f *fakeWrites) PauseWrites(ctx context.Context, timeout time.Duration) (any, error) {
	f.timeout = timeout
	if f.pauseErr != nil {
		return nil, f.pauseErr
	}
	f.paused = true
	return map[string]string{"status": "paused"}, nil
}

func (f *fakeWrites) ResumeWrites() bool {
	was := f.paused
	f.paused = false
	return was
}

func TestWritesEndpoints(t *testing.T) {
	w := &fakeWrites{}
	h := Handler(Sources{Gatherer: prometheus.NewRegistry(), Ready: CheckFunc(func(context.Context) error { return nil }), Writes: w})
	do := func(method, path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		return rec.Code, rec.Body.String()
	}
	for _, tc := range []struct {
		method, path string
		pauseErr     error
		code         int
		body         string
	}{
		{"GET", "/api/v1/topology", nil, 200, `"state": "ok"`},
		{"POST", "/api/v1/backends/resume-writes", nil, 409, "writes are not paused"},
		{"POST", "/api/v1/backends/pause-writes?timeout=soon", nil, 400, "give a positive duration"},
		{"POST", "/api/v1/backends/pause-writes?timeout=-1s", nil, 400, "give a positive duration"},
		{"POST", "/api/v1/backends/pause-writes?timeout=3s", fmt.Errorf("%w: passthrough", ErrPauseRefused), 409, "passthrough"},
		{"POST", "/api/v1/backends/pause-writes?timeout=3s", errors.New("2 units still hold the primary"), 503, "2 units"},
		{"POST", "/api/v1/backends/pause-writes?timeout=3s", nil, 200, `"status": "paused"`},
		{"GET", "/api/v1/topology", nil, 200, `"paused": true`},
		{"POST", "/api/v1/backends/resume-writes", nil, 200, `"status": "resumed"`},
		{"GET", "/api/v1/backends/pause-writes", nil, 405, ""},
	} {
		w.pauseErr = tc.pauseErr
		code, body := do(tc.method, tc.path)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s %s: %d %q, want %d with %q", tc.method, tc.path, code, body, tc.code, tc.body)
		}
	}
	if w.timeout != 3*time.Second {
		t.Errorf("the pause's timeout was %v, want 3s from the query", w.timeout)
	}
	if _, _ = do("POST", "/api/v1/backends/pause-writes"); w.timeout != 10*time.Second {
		t.Errorf("without a timeout, the pause's is %v, want 10s", w.timeout)
	}
}
