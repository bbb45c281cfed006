package helm

import (
	"errors"
	"net/http"

	"github.com/kubecode/kubecode/adapters/kubernetes"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// statusError is an error that carries an HTTP status and a reason, as the
// bridge reports them to scripts.
type statusError interface {
	error
	HTTPStatus() int
	Reason() string
}

// wrapError gives Helm's and the API server's errors their status and
// reason, keeping the whole message (what Helm was doing); other errors
// pass unchanged.
func wrapError(err error) error {
	var se statusError
	if err == nil || errors.As(err, &se) {
		return err
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		return kubernetes.StatusError(int(s.Code), string(s.Reason), err.Error())
	}
	if errors.Is(err, driver.ErrReleaseNotFound) || errors.Is(err, driver.ErrNoDeployedReleases) {
		return kubernetes.StatusError(http.StatusNotFound, "NotFound", err.Error())
	}
	return err
}

// badRequest is an error in the call's arguments.
func badRequest(msg string) error {
	return kubernetes.StatusError(http.StatusBadRequest, "BadRequest", msg)
}

// refused is a call this adapter's own rules refuse (chart sources).
func refused(msg string) error {
	return kubernetes.StatusError(http.StatusForbidden, "Refused", msg)
}
