// Command floor is the whole-process benchmark's floor: what no tool call
// can avoid. It starts, reads the four sources of the workspace given as
// its one argument, and SHA256s each, and prints the four digests.
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: floor WORKSPACE")
		os.Exit(2)
	}
	for _, name := range []string{"data/transactions.csv", "data/groups.csv", "data/customers.csv", "contracts/metric-definitions.json"} {
		data, err := os.ReadFile(filepath.Join(os.Args[1], name))
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor: a source could not be read")
			os.Exit(1)
		}
		fmt.Printf("%x  %s\n", sha256.Sum256(data), name)
	}
}
