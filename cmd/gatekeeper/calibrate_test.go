package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReadWorkloadSplitsOnSemicolonAtLineEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.sql")
	require.NoError(t, os.WriteFile(path, []byte(`-- a comment
SELECT 1;

SELECT a,
       b FROM t WHERE s = 'x;y';
SELECT 3`), 0o644))
	stmts, err := readWorkload(path)
	require.NoError(t, err)
	require.Equal(t, []string{"SELECT 1", "SELECT a,\n       b FROM t WHERE s = 'x;y'", "SELECT 3"}, stmts)
}

func TestReadWorkloadRefusesAnEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.sql")
	require.NoError(t, os.WriteFile(path, []byte("-- nothing\n\n"), 0o644))
	_, err := readWorkload(path)
	require.ErrorContains(t, err, "one SQL statement per line")
}

func TestSetCapacityKeepsCommentsAndOtherKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gk.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`# production proxy
listen: 0.0.0.0:6033
admission:
  enabled: true # on since March
  capacity: 1s
  discipline: sjf
`), 0o644))
	require.NoError(t, setCapacity(path, 2500*time.Millisecond))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	s := string(data)
	require.Contains(t, s, "# production proxy")
	require.Contains(t, s, "# on since March")
	require.Contains(t, s, "capacity: 2.5s")
	require.Contains(t, s, "discipline: sjf")
	require.Equal(t, 1, strings.Count(s, "capacity:"))
}

func TestSetCapacityAddsTheSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gk.yaml")
	require.NoError(t, os.WriteFile(path, []byte("listen: 0.0.0.0:6033\n"), 0o644))
	require.NoError(t, setCapacity(path, 40*time.Millisecond))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "listen: 0.0.0.0:6033\nadmission:\n  capacity: 40ms\n", string(data))

	missing := filepath.Join(t.TempDir(), "new.yaml")
	require.NoError(t, setCapacity(missing, time.Second))
	data, err = os.ReadFile(missing)
	require.NoError(t, err)
	require.Equal(t, "admission:\n  capacity: 1s\n", string(data))
}

func TestSetCapacityRefusesAScalarSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gk.yaml")
	require.NoError(t, os.WriteFile(path, []byte("admission: on\n"), 0o644))
	require.ErrorContains(t, setCapacity(path, time.Second), "admission is not a mapping")
}
