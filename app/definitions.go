package app

import (
	"github.com/metricproof/metricproof/app/jsonvalue"
	"github.com/metricproof/metricproof/domain"
)

// checkDefinitions accepts the definitions file only when it is strict JSON
// equal, as a JSON value, to domain.Contract (protocol §4): key order and white
// space are free, numbers compare by exact decimal value (80 equals 80.0),
// and true never equals 1. A file that starts with a byte order mark is
// refused for the mark, with the fix. Every refusal is a
// domain.DefinitionsError: INVALID_DEFINITIONS.
func checkDefinitions(data []byte) error {
	if err := domain.DefinitionsMark(data); err != nil {
		return err
	}
	got, err := jsonvalue.Parse(data)
	if err != nil {
		return &domain.DefinitionsError{Reason: "not strict JSON: " + err.Error()}
	}
	want, err := jsonvalue.Parse([]byte(domain.Contract))
	if err != nil {
		return &domain.DefinitionsError{Reason: "the built-in contract does not parse: " + err.Error()}
	}
	if path, same := jsonvalue.Diff(want, got); !same {
		return &domain.DefinitionsError{Reason: "differs from the " + domain.DefinitionID + " contract at " + path}
	}
	return nil
}

// parseSource validates one source: the CSV sources in the domain, the
// definitions file here.
func parseSource(name string, data []byte, in *domain.Inputs) error {
	if name == domain.DefinitionsFile {
		return checkDefinitions(data)
	}
	return domain.ParseSource(name, data, in)
}
