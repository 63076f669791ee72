package engine

import "golang.org/x/sys/unix"

// populate asks Linux to map a window's pages at once, in one call,
// rather than one page fault at a time as the hash reaches them.
const populate = unix.MAP_POPULATE
