package procstat

import (
	"os"
	"os/exec"
	"testing"
)

func TestParseTicks(t *testing.T) {
	got, err := ParseTicks("4242 (gate (keeper) x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 150 25 0 0 20 0 12 0 100 0 0")
	if err != nil || got != 175 {
		t.Errorf("ParseTicks = %d, %v; want 175 (utime 150 + stime 25)", got, err)
	}
	for _, bad := range []string{"garbage", "4242 (short) S 1", "1 (x) S 1 2 3 4 5 6 7 8 9 10 u s"} {
		if _, err := ParseTicks(bad); err == nil {
			t.Errorf("ParseTicks(%q): no error", bad)
		}
	}
}

func TestStatusField(t *testing.T) {
	status := "Name:\tgatekeeper\nVmRSS:\t   14812 kB\nCpus_allowed_list:\t0-1\n"
	if v, ok := StatusField(status, "Cpus_allowed_list"); !ok || v != "0-1" {
		t.Errorf("Cpus_allowed_list = %q, %v", v, ok)
	}
	if _, ok := StatusField(status, "VmSwap"); ok {
		t.Error("a line that is not there was found")
	}
}

func TestThisProcess(t *testing.T) {
	if rss, err := RSS(os.Getpid()); err != nil || rss < 1<<20 {
		t.Errorf("RSS = %d, %v; want a megabyte or more", rss, err)
	}
	if _, err := CPU(os.Getpid()); err != nil {
		t.Error(err)
	}
	if !Running(os.Getpid()) {
		t.Error("this process does not run")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if Running(cmd.Process.Pid) {
		t.Errorf("process %d, reaped, still runs", cmd.Process.Pid)
	}
}
