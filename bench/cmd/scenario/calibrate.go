package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// calibration is how the scenario runs gatekeeper calibrate for a mode.
type calibration struct {
	Clients   int
	Step      time.Duration
	Warmup    time.Duration
	MaxFactor int
}

// calibrateModes gives every admission mode without a capacity of its own the capacity
// gatekeeper calibrate chooses under that mode's discipline and aging, with the proxies'
// type key and estimator settings, against the loaded bookstore. Each curve is kept in
// the results as calibrate-MODE.txt. The disciplines want different pools: under fifo a
// heavy unit at the head holds back the queue until it fits, under sjf a larger pool only
// lets the heavy units slow the short ones.
func calibrateModes(ctx context.Context, o options, s proxySettings, modes []mode) error {
	for i := range modes {
		m := &modes[i]
		if !m.Admission || m.Capacity > 0 || m.Auto {
			continue
		}
		cfgPath := filepath.Join(s.Dir, "calibrate-"+m.Name+".yaml")
		if err := os.WriteFile(cfgPath, []byte(calibrateYAML(*m, s)), 0o644); err != nil {
			return err
		}
		curvePath := filepath.Join(o.out, "calibrate-"+m.Name+".txt")
		curve, err := os.Create(curvePath)
		if err != nil {
			return err
		}
		args := []string{"calibrate", "--dsn", o.dsn(o.primary), "--workload", "bookstore:" + o.mix,
			"--config", cfgPath, "--clients", strconv.Itoa(o.calibrate.Clients),
			"--step-duration", o.calibrate.Step.String(), "--warmup", o.calibrate.Warmup.String(),
			"--max-factor", strconv.Itoa(o.calibrate.MaxFactor)}
		fmt.Fprintf(os.Stderr, "calibrating %s (its curve: %s)\n", m.Name, curvePath)
		cmd := exec.CommandContext(ctx, s.Binary, args...)
		cmd.Stdout, cmd.Stderr = io.MultiWriter(curve, os.Stderr), os.Stderr
		err = cmd.Run()
		curve.Close()
		if err != nil {
			return fmt.Errorf("calibrate %s: %w", m.Name, err)
		}
		c, err := chosenCapacity(curvePath)
		if err != nil {
			return fmt.Errorf("calibrate %s: %w", m.Name, err)
		}
		m.Capacity, m.Calibrated = c, true
		fmt.Fprintf(os.Stderr, "%s: capacity %s\n", m.Name, c)
	}
	return nil
}

// calibrateYAML is the configuration gatekeeper calibrate runs m with.
func calibrateYAML(m mode, s proxySettings) string {
	reserve := ""
	if m.Reserve {
		reserve = s.Reserve.yaml()
	}
	return fmt.Sprintf("classify:\n  type_key: %s\nestimator:\n  weight: %g\n  backend_cpus: %d\n"+
		"admission:\n  discipline: %s\n  aging: %g\n  last_call: %s\n  queue_timeout: %s\n",
		s.typeKey(), s.Weight, s.BackendCPUs, m.Discipline, m.Aging, m.LastCall, s.QueueTimeout) + reserve
}

// chosenCapacity reads the capacity a calibrate output at path settled on: its last
// "  capacity: D" line, under "admission:".
func chosenCapacity(path string) (time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var chosen time.Duration
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "  capacity: ")
		if !ok {
			continue
		}
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("%s: bad capacity line %q", path, sc.Text())
		}
		chosen = d
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if chosen == 0 {
		return 0, fmt.Errorf("%s: no capacity chosen", path)
	}
	return chosen, nil
}
