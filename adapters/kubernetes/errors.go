package kubernetes

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// apiError is a failed Kubernetes call in the shape the bridge reports: an
// HTTP status, a Kubernetes reason and the server's message.
type apiError struct {
	status int
	reason string
	msg    string
}

func (e *apiError) Error() string   { return e.msg }
func (e *apiError) HTTPStatus() int { return e.status }
func (e *apiError) Reason() string  { return e.reason }

// StatusError returns an error with an HTTP status and a Kubernetes
// reason, reported to scripts as API errors are: for adapters building on
// this one (Helm) whose own failures read like the API's.
func StatusError(status int, reason, msg string) error {
	return &apiError{status: status, reason: reason, msg: msg}
}

// wrapError converts client-go errors into apiError so the script sees the
// status code (403, 404, ...) and reason.
func wrapError(err error) error {
	if err == nil {
		return nil
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		code := int(s.Code)
		if code == 0 {
			code = http.StatusInternalServerError
		}
		return &apiError{status: code, reason: string(s.Reason), msg: s.Message}
	}
	return err
}
