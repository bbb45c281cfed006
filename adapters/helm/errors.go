package helm

import (
	"errors"
	"net/http"

	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// apiError is an error with an HTTP status and a reason, as the bridge
// reports them to scripts.
type apiError struct {
	msg    string
	status int
	reason string
}

func (e *apiError) Error() string   { return e.msg }
func (e *apiError) HTTPStatus() int { return e.status }
func (e *apiError) Reason() string  { return e.reason }

// wrapError gives Helm's and the API server's errors their status and
// reason; other errors pass unchanged.
func wrapError(err error) error {
	var ae *apiError
	if err == nil || errors.As(err, &ae) {
		return err
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		return &apiError{msg: err.Error(), status: int(s.Code), reason: string(s.Reason)}
	}
	if errors.Is(err, driver.ErrReleaseNotFound) || errors.Is(err, driver.ErrNoDeployedReleases) {
		return &apiError{msg: err.Error(), status: http.StatusNotFound, reason: "NotFound"}
	}
	return err
}

// badRequest is an error in the call's arguments.
func badRequest(msg string) error {
	return &apiError{msg: msg, status: http.StatusBadRequest, reason: "BadRequest"}
}
