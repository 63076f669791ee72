//go:build unix

package main

import (
	"os"
	"runtime"
	"syscall"
)

// exitedRSSKiB is the peak resident size of the finished process p, in KiB:
// getrusage's ru_maxrss, KiB on Linux and bytes on macOS.
func exitedRSSKiB(p *os.ProcessState) int64 {
	usage, ok := p.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(usage.Maxrss) / 1024
	}
	return int64(usage.Maxrss)
}
