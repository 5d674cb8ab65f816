package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/admit-go/admit/policy"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// manifest is deploy/kubernetes/admit.yaml, decoded.
type manifest struct {
	config  corev1.ConfigMap
	deploy  appsv1.Deployment
	service corev1.Service
}

// readManifest decodes each document of the manifest strictly (an unknown
// field is an error) into Kubernetes' type for its kind.
func readManifest(t *testing.T) manifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("kubernetes", "admit.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	seen := map[string]bool{}
	for i, doc := range regexp.MustCompile(`(?m)^---$`).Split(string(data), -1) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		var into any
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 ConfigMap":
			into = &m.config
		case "apps/v1 Deployment":
			into = &m.deploy
		case "v1 Service":
			into = &m.service
		default:
			t.Fatalf("document %d: unexpected %s %s", i, tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			t.Fatalf("document %d (%s): %v", i, tm.Kind, err)
		}
		seen[tm.Kind] = true
	}
	if len(seen) != 3 {
		t.Fatalf("the manifest has %v; want a ConfigMap, a Deployment and a Service", seen)
	}
	return m
}

// TestKubernetesManifest: the manifest decodes with Kubernetes' API types,
// its policy is one admit serve loads, and its parts agree with one
// another and with admit serve: the probes on /healthz and /readyz at the
// admin port, the policy mounted where --config looks, the Service on the
// pods' ports, a non-root read-only container.
func TestKubernetesManifest(t *testing.T) {
	m := readManifest(t)
	for name, src := range m.config.Data {
		if _, err := policy.Parse(name, []byte(src)); err != nil {
			t.Errorf("the ConfigMap's %s is not a policy admit serve loads: %v", name, err)
		}
	}
	spec := m.deploy.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	for name, v := range map[string]string{"http": "ADMIT_HTTP_ADDR", "grpc": "ADMIT_GRPC_ADDR", "admin": "ADMIT_ADMIN_ADDR"} {
		if p, ok := ports[name]; !ok || env[v] != ":"+itoa(p) {
			t.Errorf("port %s is %d, but %s is %q", name, p, v, env[v])
		}
	}
	for probe, path := range map[*corev1.Probe]string{c.ReadinessProbe: "/readyz", c.LivenessProbe: "/healthz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "admin" {
			t.Errorf("want a probe of %s on the admin port; have %+v", path, probe)
		}
	}
	i := slices.Index(c.Args, "--config")
	if i < 0 || i+1 == len(c.Args) {
		t.Fatalf("args %q: no --config", c.Args)
	}
	mounted := false
	for _, vm := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name == vm.Name && v.ConfigMap != nil && v.ConfigMap.Name == m.config.Name && vm.MountPath == c.Args[i+1] {
				mounted = true
			}
		}
	}
	if !mounted {
		t.Errorf("--config %s is not where the ConfigMap %s is mounted", c.Args[i+1], m.config.Name)
	}
	if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Error("the pod may run as root")
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("the container's root file system is writable")
	}
	for k, v := range m.service.Spec.Selector {
		if m.deploy.Spec.Template.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, which the pods do not carry", k, v)
		}
	}
	for _, p := range m.service.Spec.Ports {
		if _, ok := ports[p.TargetPort.String()]; !ok {
			t.Errorf("the Service's port %s targets %s, which the container does not name", p.Name, p.TargetPort.String())
		}
		if p.Name == "grpc" && (p.AppProtocol == nil || *p.AppProtocol != "grpc") {
			t.Error("the Service's gRPC port does not say appProtocol: grpc")
		}
	}
}

func itoa(n int32) string {
	var b [12]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}

// TestEnvoyConfig: the Envoy snippet decodes into Envoy's bootstrap
// (go-control-plane's types, unknown fields refused) and passes Envoy's
// validation rules; its rate-limit filter asks the domain of the policy in
// the manifest, over gRPC (HTTP/2) at admit serve's gRPC port.
func TestEnvoyConfig(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("envoy", "envoy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	var bs bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(js, &bs); err != nil {
		t.Fatalf("envoy.yaml does not decode as Envoy's bootstrap: %v", err)
	}
	if err := bs.ValidateAll(); err != nil {
		t.Fatalf("envoy.yaml breaks Envoy's validation rules: %v", err)
	}
	var rl ratelimitv3.RateLimit
	var hcm hcmv3.HttpConnectionManager
	for _, l := range bs.StaticResources.Listeners {
		for _, fc := range l.FilterChains {
			for _, f := range fc.Filters {
				if err := f.GetTypedConfig().UnmarshalTo(&hcm); err != nil {
					t.Fatal(err)
				}
				for _, hf := range hcm.HttpFilters {
					if hf.Name == "envoy.filters.http.ratelimit" {
						if err := hf.GetTypedConfig().UnmarshalTo(&rl); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
	}
	m := readManifest(t)
	p, err := policy.Parse("policy.yaml", []byte(m.config.Data["policy.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	if rl.Domain == "" || !slices.ContainsFunc(p.Domains, func(d *policy.Domain) bool { return d.Name == rl.Domain }) {
		t.Errorf("the rate-limit filter asks domain %q, which the policy does not define", rl.Domain)
	}
	cluster := rl.GetRateLimitService().GetGrpcService().GetEnvoyGrpc().GetClusterName()
	var admit *clusterv3.Cluster
	for _, c := range bs.StaticResources.Clusters {
		if c.Name == cluster {
			admit = c
		}
	}
	if admit == nil {
		t.Fatalf("the rate-limit service's cluster %q is not defined", cluster)
	}
	sa := admit.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
	if sa.GetPortValue() != 8081 {
		t.Errorf("cluster %s reaches port %d; admit serve's gRPC is on 8081", cluster, sa.GetPortValue())
	}
	if _, ok := admit.TypedExtensionProtocolOptions["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]; !ok {
		t.Errorf("cluster %s does not speak HTTP/2, which gRPC needs", cluster)
	}
}

// TestDockerfile: the Dockerfile cannot be built here (no Docker daemon):
// it is checked as text: a build stage of cmd/admit, a static binary, a
// distroless final stage running as a non-root user, the ports of the
// listeners it configures, and admit serve as the entry point.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var froms, lines []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		lines = append(lines, l)
		if strings.HasPrefix(l, "FROM ") {
			froms = append(froms, l)
		}
	}
	if len(froms) != 2 || !strings.HasPrefix(froms[1], "FROM gcr.io/distroless/static") {
		t.Errorf("stages %q: want a build stage, then distroless static", froms)
	}
	want := []string{"CGO_ENABLED=0 go build", "./cmd/admit", "USER nonroot", `ENTRYPOINT ["/admit", "serve"]`, "EXPOSE 8080 8081 8082",
		"ADMIT_HTTP_ADDR=:8080", "ADMIT_GRPC_ADDR=:8081", "ADMIT_ADMIN_ADDR=:8082"}
	text := strings.Join(lines, "\n")
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the Dockerfile lacks %q", w)
		}
	}
	if fi, err := os.Stat(filepath.Join("..", "cmd", "admit", "main.go")); err != nil || fi.IsDir() {
		t.Errorf("the Dockerfile builds ./cmd/admit, which is not in the repository: %v", err)
	}
	if last := lines[len(lines)-1]; !bytes.HasPrefix([]byte(last), []byte("ENTRYPOINT")) {
		t.Errorf("the last instruction is %q; want the ENTRYPOINT", last)
	}
}
