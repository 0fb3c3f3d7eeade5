package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRunRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{{"-no-such-flag"}, {"extra"}, {"-seed", "x"},
		{"balance", "extra"}, {"balance", "-policies", "self,random"}, {"balance", "-replicas", "1,x"},
		{"balance", "-clients", "100", "-detail", "175"},
		{"fleet", "extra"}, {"fleet", "-sizes", "2,3"}, {"fleet", "-sizes", "1,x"}, {"fleet", "-interval", "0s"},
		{"fleet", "-rules", "react,nope"}, {"fleet", "-latency", "0s"}} {
		require.Error(t, run(args), "%q", args)
	}
}

func TestRunBalance(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, run([]string{"balance", "-quick", "-out", dir, "-replicas", "0,1", "-policies", "self,rr",
		"-clients", "50", "-detail", "50", "-limit", "0"}))
	md, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "go run ./bench/cmd/sim balance -quick -out "+dir)
	require.NotContains(t, string(md), "## With a per-backend limit", "-limit 0 runs no limited set")
	for _, f := range []string{"peak-throughput.png", "throughput.png", "point-read.png"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
	}
}

func TestRunFleet(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, run([]string{"fleet", "-quick", "-out", dir, "-sizes", "1,2", "-interval", "1s", "-ttl", "4s",
		"-latency", "20ms", "-rules", "drain,react"}))
	md, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "go run ./bench/cmd/sim fleet -quick -out "+dir)
	require.Contains(t, string(md), "every 1s, lease 4s, latency 20ms", "the fleet's timing from the flags")
	require.Contains(t, string(md), "every 40s, lease 2m40s, latency 800ms", "and on the model's time scale")
	require.Contains(t, string(md), "drain, every 1s, lease 4s")
	require.Contains(t, string(md), "react, every 1s, lease 4s")
	require.NotContains(t, string(md), "interval, every 1s", "only the rules asked for")
	for _, f := range []string{"sum-0.png", "members-2-alone.png", "churn-shares-0.png", "churn-shares-3.png"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
	}
}

func TestParseLists(t *testing.T) {
	ns, err := parseInts("0, 1,4")
	require.NoError(t, err)
	require.Equal(t, []int{0, 1, 4}, ns)
	require.Equal(t, "0,1,4", joinInts(ns))
	bs, err := parseBalances("rr,self")
	require.NoError(t, err)
	require.Equal(t, "rr,self", joinBalances(bs))
}
