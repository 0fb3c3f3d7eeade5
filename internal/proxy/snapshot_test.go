package proxy

import "testing"

// publish runs after every command; it must not allocate unless the view changed.
func TestPublishAllocatesOnlyOnChange(t *testing.T) {
	s := &session{connState: connState{user: "app", schema: "shop"}}
	s.link = &dedicated{s: s}
	s.publish()
	first := s.view.Load()
	if n := testing.AllocsPerRun(100, s.publish); n != 0 {
		t.Errorf("publish with nothing changed: %v allocations, want 0", n)
	}
	if s.view.Load() != first {
		t.Error("publish with nothing changed replaced the view")
	}
	s.schema = "other"
	s.publish()
	if v := s.view.Load(); v == first || v.schema != "other" || v.user != "app" {
		t.Errorf("after a change of schema the view is %+v, want the new schema", *v)
	}
}
