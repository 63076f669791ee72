package app

import (
	"github.com/metricproof/metricproof/ports"
)

// Ports are the adapters the use cases run on.
type Ports struct {
	Sources  ports.SourceReader
	Paths    ports.PathResolver
	Evidence ports.EvidenceStore
	Cancel   ports.Canceller
	Clock    ports.Clock
	Engine   ports.Engine
}

// Runner answers one call of the stdio protocol: options in, one reply out.
type Runner struct {
	// Open wires the ports for the options' workspace. It reports
	// ports.ErrMissing or ports.ErrNotDir when the workspace is not an
	// existing directory.
	Open func(Options) (Ports, error)
	// Read reads the request from standard input, stopping with over set as
	// soon as it passes limitChars characters.
	Read func(limitChars int) (data []byte, over bool, err error)
}

// Run parses the options (their faults are decided before any input is
// read, so their request_id is null), opens the workspace, reads one
// request under the limit, and answers it. A panic anywhere below becomes
// INTERNAL_ERROR.
func (r Runner) Run(args []string) (reply Reply) {
	var h heard
	defer func() {
		if recover() != nil {
			reply = failure(h, fail(InternalError, "the engine failed unexpectedly; nothing was committed by this failure"))
		}
	}()
	opts, e := ParseOptions(args)
	if e != nil {
		return failure(h, e)
	}
	if opts.Help {
		return Reply{Line: []byte(Usage), Exit: 0}
	}
	p, err := r.Open(opts)
	if err != nil {
		return failure(h, classify(openingWorkspace, "", err))
	}
	data, over, err := r.Read(RequestLimitChars)
	switch {
	case err != nil:
		return failure(h, fail(IOOrNumericError, "standard input could not be read"))
	case over:
		return failure(h, fail(RequestLimit, "the request is longer than %d characters", RequestLimitChars))
	}
	req, h2, e := decodeRequest(data)
	h = h2
	if e != nil {
		return failure(h, e)
	}
	s := &service{p: p, outputDir: opts.OutputDir}
	return s.answer(req, h)
}

// service runs the three tools over one set of ports.
type service struct {
	p         Ports
	outputDir string
}

// answer runs a request that passed every protocol check.
func (s *service) answer(req request, h heard) Reply {
	if req.tool != ToolInspect && s.outputDir == "" {
		return failure(h, fail(MissingContext, "%s needs --output-dir, chosen by the operator", req.tool))
	}
	var (
		result    any
		artifacts Artifacts
		e         *Error
	)
	switch req.tool {
	case ToolInspect:
		result, e = s.Inspect()
	case ToolAnalyze:
		var r AnalyzeResult
		r, e = s.Analyze(req.id, req.digest)
		result, artifacts = r.Result, r.Artifacts
	case ToolVerify:
		result, e = s.Verify(req.runID)
	}
	if e != nil {
		return failure(h, e)
	}
	return success(h, result, artifacts)
}

// checkCancel answers CANCELLED when the operator's marker exists.
func (s *service) checkCancel(point string) *Error {
	cancelled, err := s.p.Cancel.Cancelled()
	if err != nil {
		return classify(checkingMarker, "", err)
	}
	if cancelled {
		return fail(Cancelled, "the cancel file exists (checked %s); the call stopped and nothing was committed", point)
	}
	return nil
}
