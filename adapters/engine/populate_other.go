//go:build unix && !linux

package engine

// populate is Linux's MAP_POPULATE, which other systems lack: their pages
// are mapped as the hash reaches them.
const populate = 0
