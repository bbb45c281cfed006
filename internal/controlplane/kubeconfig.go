package controlplane

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// restConfig is a client configuration for one bearer-token identity.
func restConfig(host string, caPEM []byte, token string) *rest.Config {
	return &rest.Config{
		Host:            host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
		QPS:             -1, // no client-side throttling against a local server
	}
}

// kubeconfig is the subset of the kubeconfig file format the control plane
// writes; it is what `kubectl config view --raw` prints for one context.
type kubeconfig struct {
	APIVersion     string         `json:"apiVersion"`
	Kind           string         `json:"kind"`
	CurrentContext string         `json:"current-context"`
	Clusters       []namedCluster `json:"clusters"`
	Users          []namedUser    `json:"users"`
	Contexts       []namedContext `json:"contexts"`
}

type namedCluster struct {
	Name    string `json:"name"`
	Cluster struct {
		Server                   string `json:"server"`
		CertificateAuthorityData []byte `json:"certificate-authority-data"`
	} `json:"cluster"`
}

type namedUser struct {
	Name string `json:"name"`
	User struct {
		Token string `json:"token"`
	} `json:"user"`
}

type namedContext struct {
	Name    string `json:"name"`
	Context struct {
		Cluster   string `json:"cluster"`
		User      string `json:"user"`
		Namespace string `json:"namespace,omitempty"`
	} `json:"context"`
}

// writeKubeconfig writes cfg as a kubeconfig file with one context named
// kubecode-<user>.
func writeKubeconfig(path, user string, cfg *rest.Config) error {
	name := "kubecode-" + user
	kc := kubeconfig{APIVersion: "v1", Kind: "Config", CurrentContext: name}
	var c namedCluster
	c.Name = "kubecode"
	c.Cluster.Server = cfg.Host
	c.Cluster.CertificateAuthorityData = cfg.CAData
	var u namedUser
	u.Name = user
	u.User.Token = cfg.BearerToken
	var x namedContext
	x.Name = name
	x.Context.Cluster = c.Name
	x.Context.User = user
	x.Context.Namespace = "default"
	kc.Clusters = []namedCluster{c}
	kc.Users = []namedUser{u}
	kc.Contexts = []namedContext{x}
	b, err := yaml.Marshal(kc)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	return os.WriteFile(path, b, 0o600)
}
