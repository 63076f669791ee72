// Package domain is the calculation metricproof exists to run, with no I/O:
// source bytes in, validated records and results out.
//
// # What lives here
//
//   - The four fixed sources ([SourceNames]), their strict CSV rules
//     ([ParseTransactions], [ParseGroups], [ParseCustomers]) and the
//     synthetic-v1 definition contract ([Contract]; the app compares a file with
//     it as a JSON value). A source's
//     faults come back together ([DataError]: the first, up to 19 more, a
//     count of the rest), each with its place and, where a common export
//     mistake explains it, the fix.
//   - The source digest ([Fingerprint]): SHA256 of each file's exact bytes and
//     the combined digest over the canonical map.
//   - The calculation ([Compute]): conversion with a pooled denominator,
//     exact revenue contributions, customer-join cardinality and the release
//     blockers in their fixed order.
//
// # Rules this package keeps
//
// It never touches a file, a clock, the environment or the network; callers
// hand it bytes and records. All arithmetic is decimal, in
// github.com/cockroachdb/apd at the contract's precision 80 ([Precision]),
// never a binary float; nothing rounds but the rate, half to even at 12
// places, and tests hold every figure to math/big rationals. A step that
// raises any condition (inexact, rounded, overflow) is a [NumericError],
// never a rounded guess. Defects in the data (a blank price, a repeated customer) are
// reported as blockers, never repaired. Error values carry the file, line and
// column of a fault but never the offending text, so their messages are safe
// to show to anyone.
package domain
