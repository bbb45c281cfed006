package catalog

import "regexp"

// SecretName matches names whose values are likely secrets wherever they
// appear (a DB_PASSWORD variable, an apiKey field, a token annotation):
// whoever records or shows values hides theirs.
var SecretName = regexp.MustCompile(`(?i)(password|passwd|passphrase|token|secret|credential|authorization|private.?key|api.?key|access.?key|encryption.?key|signing.?key|(^|[^a-z])pass$)`)
