package catalog

// CallError is an operation call's failure as providers report it and the
// bridge passes it on to scripts: an HTTP status, a machine-readable
// reason ("NotFound", "Forbidden", "AlreadyExists", "BadRequest") and the
// message. Kubernetes API errors map onto it as they are; other providers
// say theirs in the same terms. It is the one status error every provider
// returns.
type CallError struct {
	Status  int
	Reason  string
	Message string
}

func (e *CallError) Error() string { return e.Message }

// StatusError returns a *CallError.
func StatusError(status int, reason, msg string) error {
	return &CallError{Status: status, Reason: reason, Message: msg}
}
