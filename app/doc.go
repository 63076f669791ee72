// Package app holds metricproof's use cases as typed methods of a
// [Service] over the ports of package ports: [Service.Inspect],
// [Service.Analyze], [Service.Verify] (the three tools, protocol §6),
// [Service.Review] (the reviewer's page, §13), the run files as resources
// ([Service.ReadRunFile], [Service.Runs], §9.6) and the call ledger
// ([Service.CheckLedger], [Service.Record], [Service.CheckChain], §11).
// Beside it, each with one job: package evidence (the saved files, their
// layout and signature, §6.4, §10), package place (the operator's places
// and the write boundary), package remedy (a port's failure in the
// operator's words), package ledger (the hash chain).
//
// # Errors
//
// Every method returns an error whose code, from the closed set of
// package protocol, is chosen where the failure happens: a check that
// finds something wrong says so with protocol.Errorf, and a port's or the
// domain's error is coded by the fault function of what was being done
// (sourceFault, writeFault, …), beside the code that calls the port.
// protocol.ErrorOf reads it at the edge. Messages never hold an absolute
// path, key bytes, or anything from a request or a source but IDs that
// passed validation, and they say what to do next.
//
// # What it leaves to others
//
// Requests, the response envelope, the load (compute slots, the commit
// turn) and the building of a call's record are the call layer's (package
// app/call), which every transport shares; the transports frame bytes;
// the composition root opens the ports for the operator's [Options]
// ([Wire]). app holds no JSON-RPC, no Markdown, no file system.
//
// Start reading at [Service.Analyze].
package app
