// Command floor is the whole-process benchmark's floor: what no tool call
// can avoid. It starts, reads the four sources of the workspace given as
// its last argument, SHA256s each, and prints the four digests.
//
// With -engine RUNNER it is the engine floor: it also SHA256s the file
// RUNNER the way the runner hashes its own executable (adapters/engine's
// read-only mappings), which analyze and verify must do on every call
// (protocol §6), and prints that digest too.
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"

	"github.com/metricproof/metricproof/adapters/engine"
)

func main() {
	args := os.Args[1:]
	runner := ""
	if len(args) == 3 && args[0] == "-engine" {
		runner, args = args[1], args[2:]
	}
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: floor [-engine RUNNER] WORKSPACE")
		os.Exit(2)
	}
	for _, name := range []string{"data/transactions.csv", "data/groups.csv", "data/customers.csv", "contracts/metric-definitions.json"} {
		data, err := os.ReadFile(filepath.Join(args[0], name))
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor: a source could not be read")
			os.Exit(1)
		}
		fmt.Printf("%x  %s\n", sha256.Sum256(data), name)
	}
	if runner != "" {
		sum, err := engine.SumFile(runner)
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor: the runner could not be hashed")
			os.Exit(1)
		}
		fmt.Printf("%x  engine\n", sum)
	}
}
