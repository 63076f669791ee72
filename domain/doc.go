// Package domain is the calculation metricproof exists to run, with no I/O:
// source bytes in, validated records and results out.
//
// # What lives here
//
//   - The four fixed sources ([SourceNames]), their strict CSV rules
//     ([ParseTransactions], [ParseGroups], [ParseCustomers]) and the
//     synthetic-v1 definition contract ([CheckDefinitions]).
//   - The source digest ([Fingerprint]): SHA256 of each file's exact bytes and
//     the combined digest over the canonical map.
//   - The calculation ([Compute]): conversion with a pooled denominator,
//     exact revenue contributions, customer-join cardinality and the release
//     blockers in their fixed order.
//
// # Rules this package keeps
//
// It never touches a file, a clock, the environment or the network; callers
// hand it bytes and records. All arithmetic is exact decimal: fixed point
// in integers (fixed.go; 128 bits a row, 192 for sums, which SPEC §4's
// number bounds make enough), never a binary float, and nothing rounds but
// the rate, exactly half-even; tests hold it to apd decimals at precision
// 80. A result that could not be computed exactly is an error, never a
// rounded guess. Defects in the data (a blank price, a repeated customer) are
// reported as blockers, never repaired. Error values carry the file, line and
// column of a fault but never the offending text, so their messages are safe
// to show to anyone.
package domain
