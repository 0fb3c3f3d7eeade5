package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/admin"
	"github.com/gatekeeperdb/gatekeeper/internal/config"
	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
)

// newCostTable returns the estimator table configured by c.
func newCostTable(c config.Estimator) (*estimator.Table, error) {
	return estimator.New(estimatorConfig(c))
}

// stateFile is where the estimates are kept across restarts, or "" for nowhere.
func stateFile(c config.Estimator) string {
	if c.StateFile != "" {
		return c.StateFile
	}
	// systemd's StateDirectory= sets it; it may list several directories.
	if dir := os.Getenv("STATE_DIRECTORY"); dir != "" {
		first, _, _ := strings.Cut(dir, ":")
		return filepath.Join(first, "estimates.json")
	}
	return ""
}

// loadEstimates starts the table from the estimates saved at path. Estimates are soft
// state: a missing or unreadable file means starting cold, with a log line saying why.
func loadEstimates(t *estimator.Table, path string, log *slog.Logger) {
	if path == "" {
		log.Info("estimates are not kept across restarts (set estimator.state_file)")
		return
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		log.Info("no saved estimates; starting cold", "file", path)
		return
	}
	if err != nil {
		log.Warn("cannot read saved estimates; starting cold", "file", path, "err", err)
		return
	}
	defer f.Close()
	if err := t.Load(f); err != nil {
		log.Warn("cannot load saved estimates; starting cold", "file", path, "err", err)
		return
	}
	log.Info("loaded saved estimates", "file", path, "types", t.Len())
}

// saveEstimates writes the table's estimates to path atomically.
func saveEstimates(t *estimator.Table, path string) error {
	return writeAtomically(path, ".estimates-*.json", func(w io.Writer) error {
		if err := t.Save(w); err != nil {
			return fmt.Errorf("save estimates: %w", err)
		}
		return nil
	})
}

// writeAtomically writes path with write, through a temporary file of pattern in its
// directory renamed over it: a crash leaves the previous file or the new one, never half
// of one.
func writeAtomically(path, pattern string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), pattern)
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// typesSource serves the estimator table to the admin API.
type typesSource struct {
	table   *estimator.Table
	cfg     config.Estimator
	typeKey string
}

var _ admin.Types = typesSource{}

func (s typesSource) Types() admin.TypesResponse {
	snap := s.table.Snapshot()
	resp := admin.TypesResponse{
		Time:          time.Now(),
		TypeKey:       s.typeKey,
		Types:         make([]admin.TypeStats, 0, len(snap)),
		Tracked:       s.table.Len(),
		MaxTypes:      s.cfg.MaxTypes,
		Evictions:     s.table.Evictions(),
		DefaultCostMS: ms(s.cfg.DefaultCost),
	}
	for _, ts := range snap {
		st := admin.TypeStats{
			Type:    ts.Name,
			Sample:  ts.Sample,
			Count:   ts.Count,
			TotalMS: ms(ts.Total),
			Rate:    ts.Rate,
			MeanMS:  ms(ts.Mean),
			BusyMS:  ms(ts.Busy),
			P50MS:   ms(ts.P50),
			P95MS:   ms(ts.P95),
			P99MS:   ms(ts.P99),
			Share:   ts.Share,
		}
		if !ts.LastUpdate.IsZero() {
			last := ts.LastUpdate
			st.LastUpdate = &last
		}
		resp.Types = append(resp.Types, st)
	}
	return resp
}

func (s typesSource) ResetTypes() { s.table.Reset() }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
