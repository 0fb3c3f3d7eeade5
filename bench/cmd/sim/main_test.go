package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRunRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{{"-no-such-flag"}, {"extra"}, {"-seed", "x"}} {
		require.Error(t, run(args), "%q", args)
	}
}
