package runs

import "github.com/sortie-run/sortie"

// labels turns a call's metadata into the run's labels
// ([sortie.MetadataLabels]); errors name field "metadata".
func labels(md map[string]any) (map[string]string, error) {
	return sortie.MetadataLabels("metadata", md)
}

// sameLabels checks that a follow-up's metadata is the run's labels
// ([sortie.SameMetadata]).
func sameLabels(run *sortie.Run, md map[string]any) error {
	return sortie.SameMetadata("metadata", run, md)
}
