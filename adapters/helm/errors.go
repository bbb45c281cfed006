package helm

import (
	"errors"
	"net/http"

	"github.com/kubecode/kubecode/catalog"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// wrapError gives Helm's and the API server's errors their status and
// reason, keeping the whole message (what Helm was doing); other errors
// pass unchanged.
func wrapError(err error) error {
	var ce *catalog.CallError
	if err == nil || errors.As(err, &ce) {
		return err
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		return catalog.StatusError(int(s.Code), string(s.Reason), err.Error())
	}
	if errors.Is(err, driver.ErrReleaseNotFound) || errors.Is(err, driver.ErrNoDeployedReleases) {
		return catalog.StatusError(http.StatusNotFound, "NotFound", err.Error())
	}
	return err
}

// badRequest is an error in the call's arguments.
func badRequest(msg string) error {
	return catalog.StatusError(http.StatusBadRequest, "BadRequest", msg)
}

// refused is a call this adapter's own rules refuse (chart sources).
func refused(msg string) error {
	return catalog.StatusError(http.StatusForbidden, "Refused", msg)
}
