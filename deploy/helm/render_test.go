//go:build deploy

// The chart's tests: `helm template` for each values file, every rendered
// object decoded strictly into its Kubernetes API type (an unknown or
// misspelt field fails), and the Deployment checked against the real
// binary: the WAITROOM_* names are its flags, the values parse, and the
// probes' paths answer on the port the container declares.
//
// helm comes from WAITROOM_HELM (make test-deploy builds it and sets it).
package helm_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/waitroom/waitroom/deploy/deploytest"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

// kubeVersion is what helm renders for: the oldest the chart supports
// (a helm built by go install would say 1.20 otherwise).
const kubeVersion = "1.30.0"

func helmBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("WAITROOM_HELM")
	if bin == "" {
		t.Fatal("WAITROOM_HELM is not set: run `make test-deploy`, which builds helm into the tools cache and sets it")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("WAITROOM_HELM=%s: %v (make tool-helm builds it)", bin, err)
	}
	return bin
}

// rendered is one `helm template` run, decoded.
type rendered struct {
	deployment     *appsv1.Deployment
	services       map[string]*corev1.Service
	pdb            *policyv1.PodDisruptionBudget
	hpa            *autoscalingv2.HorizontalPodAutoscaler
	configMaps     map[string]*corev1.ConfigMap
	secrets        map[string]*corev1.Secret
	serviceAccount *corev1.ServiceAccount
	serviceMonitor *monitoringv1.ServiceMonitor
}

// helmTemplate runs helm template with the values files (relative to
// deploy/helm) and --set pairs.
func helmTemplate(t *testing.T, files []string, set ...string) string {
	t.Helper()
	args := []string{"template", "shop", "waitroom", "--namespace", "queue", "--kube-version", kubeVersion}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(helmBin(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// render runs helm template and decodes each object strictly; a decoding
// error fails the test.
func render(t *testing.T, files []string, set ...string) rendered {
	t.Helper()
	r, errs := decodeAll(t, helmTemplate(t, files, set...))
	for _, err := range errs {
		t.Error(err)
	}
	if r.deployment == nil {
		t.Fatal("no Deployment rendered")
	}
	return r
}

// decodeAll decodes every object of a helm template output into its API
// type, strictly, and returns what did not decode.
func decodeAll(t *testing.T, out string) (rendered, []error) {
	t.Helper()
	r := rendered{services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	var errs []error
	for _, doc := range strings.Split(out, "\n---") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("rendered object: %v\n%s", err, doc)
		}
		var obj any
		want := ""
		switch tm.Kind {
		case "Deployment":
			if r.deployment != nil {
				t.Fatal("two Deployments")
			}
			r.deployment = &appsv1.Deployment{}
			obj, want = r.deployment, "apps/v1"
		case "Service":
			obj, want = &corev1.Service{}, "v1"
		case "PodDisruptionBudget":
			r.pdb = &policyv1.PodDisruptionBudget{}
			obj, want = r.pdb, "policy/v1"
		case "HorizontalPodAutoscaler":
			r.hpa = &autoscalingv2.HorizontalPodAutoscaler{}
			obj, want = r.hpa, "autoscaling/v2"
		case "ConfigMap":
			obj, want = &corev1.ConfigMap{}, "v1"
		case "Secret":
			obj, want = &corev1.Secret{}, "v1"
		case "ServiceAccount":
			r.serviceAccount = &corev1.ServiceAccount{}
			obj, want = r.serviceAccount, "v1"
		case "ServiceMonitor":
			r.serviceMonitor = &monitoringv1.ServiceMonitor{}
			obj, want = r.serviceMonitor, "monitoring.coreos.com/v1"
		default:
			t.Fatalf("rendered a %s %s the test does not know: add its type", tm.APIVersion, tm.Kind)
		}
		if tm.APIVersion != want {
			errs = append(errs, fmt.Errorf("%s has apiVersion %q, want %q", tm.Kind, tm.APIVersion, want))
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			errs = append(errs, fmt.Errorf("%s does not decode strictly: %w\n%s", tm.Kind, err, doc))
		}
		switch o := obj.(type) {
		case *corev1.Service:
			r.services[o.Name] = o
		case *corev1.ConfigMap:
			r.configMaps[o.Name] = o
		case *corev1.Secret:
			r.secrets[o.Name] = o
		}
	}
	return r, errs
}

// stripComments drops the "# Source:" lines helm puts before each object.
func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// container returns the Deployment's waitroom container.
func (r rendered) container(t *testing.T) corev1.Container {
	t.Helper()
	cs := r.deployment.Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0].Name != "waitroom" {
		t.Fatalf("want one container named waitroom, have %d", len(cs))
	}
	return cs[0]
}

func env(c corev1.Container) map[string]corev1.EnvVar {
	m := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		m[e.Name] = e
	}
	return m
}

func port(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("container has no port named %q", name)
	return 0
}

// checkCommon holds for every values file.
func checkCommon(t *testing.T, r rendered, flags map[string]string) {
	t.Helper()
	d := r.deployment
	pod := d.Spec.Template.Spec
	c := r.container(t)
	e := env(c)

	known := map[string]bool{}
	for _, v := range flags {
		known[v] = true
	}
	for _, v := range c.Env {
		if strings.HasPrefix(v.Name, "WAITROOM_") && !known[v.Name] {
			t.Errorf("env %s sets no flag of the binary (its -h lists %d)", v.Name, len(flags))
		}
	}
	for _, s := range r.secrets {
		for k := range s.StringData {
			if !known[k] {
				t.Errorf("Secret %s key %s is no WAITROOM_* flag variable", s.Name, k)
			}
		}
	}

	// The server listens where the container port says.
	http := port(t, c, "http")
	_, p, err := net.SplitHostPort(e["WAITROOM_ADDR"].Value)
	if err != nil || p != fmt.Sprint(http) || !strings.HasPrefix(e["WAITROOM_ADDR"].Value, "0.0.0.0:") {
		t.Errorf("WAITROOM_ADDR %q does not listen on all interfaces at container port %d", e["WAITROOM_ADDR"].Value, http)
	}
	// The operations listener (-ops-addr) on its own container port, which
	// the probes use: it answers alike in every mode, where the visitors'
	// port's /healthz is the app's with -upstream.
	ops := port(t, c, "ops")
	if want := fmt.Sprintf("0.0.0.0:%d", ops); e["WAITROOM_OPS_ADDR"].Value != want || ops == http {
		t.Errorf("WAITROOM_OPS_ADDR %q, want %s on a port of its own", e["WAITROOM_OPS_ADDR"].Value, want)
	}
	probe := func(name string, pr *corev1.Probe, path string) {
		if pr == nil || pr.HTTPGet == nil {
			t.Errorf("%s probe is not an HTTP GET", name)
			return
		}
		if pr.HTTPGet.Path != path || pr.HTTPGet.Port != intstr.FromString("ops") {
			t.Errorf("%s probe is %s on %s, want %s on ops", name, pr.HTTPGet.Path, pr.HTTPGet.Port.String(), path)
		}
	}
	probe("readiness", c.ReadinessProbe, "/readyz")
	probe("liveness", c.LivenessProbe, "/healthz")
	probe("startup", c.StartupProbe, "/healthz")

	// Shutdown: preStop sleep, then the drain inside -shutdown-timeout, all
	// inside the grace period.
	shutdown, err := time.ParseDuration(e["WAITROOM_SHUTDOWN_TIMEOUT"].Value)
	if err != nil {
		t.Fatalf("WAITROOM_SHUTDOWN_TIMEOUT: %v", err)
	}
	drain, err := time.ParseDuration(e["WAITROOM_DRAIN_WINDOW"].Value)
	if err != nil {
		t.Fatalf("WAITROOM_DRAIN_WINDOW: %v", err)
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
		t.Fatal("no preStop sleep")
	}
	sleep := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	if pod.TerminationGracePeriodSeconds == nil {
		t.Fatal("no terminationGracePeriodSeconds")
	}
	grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	if sleep <= 0 || drain >= shutdown || grace <= sleep+shutdown {
		t.Errorf("preStop %v + shutdown-timeout %v (drain %v) must fit inside terminationGracePeriodSeconds %v", sleep, shutdown, drain, grace)
	}

	// Secrets come from a Secret, all of it as WAITROOM_* variables.
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name == "" {
		t.Errorf("envFrom is %+v, want one secretRef", c.EnvFrom)
	}

	// The sandbox.
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod securityContext %+v is not non-root", psc)
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod seccompProfile is not RuntimeDefault")
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container securityContext %+v: want a read-only root, no privilege escalation, all capabilities dropped", sc)
	}

	// The Service sends to the http port of these pods; the PDB covers them.
	sel := d.Spec.Selector.MatchLabels
	for k, v := range sel {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod labels", k, v)
		}
	}
	main := r.services[d.Name]
	if main == nil {
		t.Fatalf("no Service named %s", d.Name)
	}
	if len(main.Spec.Ports) != 1 || main.Spec.Ports[0].TargetPort != intstr.FromString("http") || !subset(main.Spec.Selector, sel) {
		t.Errorf("Service %s: ports %+v selector %v", main.Name, main.Spec.Ports, main.Spec.Selector)
	}
	if r.pdb == nil || r.pdb.Spec.Selector == nil || !subset(r.pdb.Spec.Selector.MatchLabels, sel) {
		t.Errorf("no PodDisruptionBudget over the pods")
	}
}

func subset(a, b map[string]string) bool {
	if len(a) == 0 {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// startAsRendered runs the binary with the Deployment's environment, a
// real Redis in place of the chart's URL, the secrets a Secret would carry
// and loopback ports in place of 0.0.0.0, and probes it as the kubelet
// would. Files the pod mounts are laid out in a temporary directory.
func startAsRendered(t *testing.T, r rendered, bin string) {
	t.Helper()
	c := r.container(t)
	redis := redistest.StartReal(t)
	dir := t.TempDir()
	vars := []string{
		"WAITROOM_SECRET=a-test-secret-of-32-bytes-length",
		"WAITROOM_ADMIN_KEY=a-test-admin-key-of-32-bytes-len",
	}
	for _, e := range c.Env {
		v := e.Value
		switch e.Name {
		case "WAITROOM_ADDR":
			continue // -addr below
		case "WAITROOM_REDIS":
			v = redis.URL()
		case "WAITROOM_REDIS_SENTINEL", "WAITROOM_REDIS_CLUSTER":
			continue // one plain redis-server here
		case "WAITROOM_METRICS_ADDR", "WAITROOM_OPS_ADDR":
			v = "127.0.0.1:0"
		case "WAITROOM_ROOMS":
			v = layOut(t, r, dir, v)
		case "WAITROOM_ADMIN_KEYS":
			// A Secret of the operator's, mounted: a labelled key file.
			v = filepath.Join(dir, filepath.Base(v))
			if err := os.WriteFile(v, []byte("ops: a-test-labelled-admin-key-0001\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if e.ValueFrom != nil {
			if e.Name != "WAITROOM_REDIS" {
				t.Fatalf("env %s from %+v: the test cannot resolve it", e.Name, e.ValueFrom)
			}
			v = redis.URL()
		}
		vars = append(vars, e.Name+"="+v)
	}
	s := deploytest.Start(t, bin, vars, "-addr", "127.0.0.1:0")
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
		if p == nil || p.HTTPGet == nil {
			continue
		}
		addr := s.Addr
		switch p.HTTPGet.Port {
		case intstr.FromString("http"):
		case intstr.FromString("ops"):
			addr = s.OpsAddr(t)
		default:
			t.Fatalf("probe on port %s: the test knows http and ops", p.HTTPGet.Port.String())
		}
		waitProbe(t, "http://"+addr+p.HTTPGet.Path, s.Log)
	}
	// Prometheus scrapes the operations port too (the metrics Service
	// leads there).
	waitProbe(t, "http://"+s.OpsAddr(t)+"/metrics", s.Log)
}

// waitProbe waits for url to answer 200, as a kubelet probe would, and logs
// the last answer and the server's log when it never does.
func waitProbe(t *testing.T, url string, serverLog func() string) {
	t.Helper()
	var last error
	answered := false
	defer func() { // runs too when the wait below fails the test
		if !answered {
			t.Logf("last answer: %v\n%s", last, serverLog())
		}
	}()
	waitfor.Until(t, 20*time.Second, "GET "+url+" answering 200", func() bool {
		resp, err := http.Get(url)
		if last = err; err != nil {
			return false
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			last = fmt.Errorf("status %d", resp.StatusCode)
			return false
		}
		return true
	})
	answered = true
}

// layOut writes the ConfigMap's key where the pod would see it and returns
// that path for WAITROOM_ROOMS.
func layOut(t *testing.T, r rendered, dir, podPath string) string {
	t.Helper()
	for _, cm := range r.configMaps {
		for k, v := range cm.Data {
			if filepath.Base(podPath) == k {
				p := filepath.Join(dir, k)
				if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
					t.Fatal(err)
				}
				return p
			}
		}
	}
	t.Fatalf("WAITROOM_ROOMS=%s: no ConfigMap key %s rendered", podPath, filepath.Base(podPath))
	return ""
}

func TestChartDefault(t *testing.T) {
	bin := deploytest.Binary(t)
	flags := deploytest.Flags(t, bin)
	r := render(t, nil)
	checkCommon(t, r, flags)
	if r.deployment.Spec.Replicas == nil || *r.deployment.Spec.Replicas != 3 {
		t.Errorf("replicas %v, want 3", r.deployment.Spec.Replicas)
	}
	if r.hpa != nil || r.serviceMonitor != nil {
		t.Error("HPA or ServiceMonitor rendered by default")
	}
	if ms := r.services["shop-waitroom-metrics"]; ms == nil || len(ms.Spec.Ports) != 1 || ms.Spec.Ports[0].TargetPort != intstr.FromString("ops") {
		t.Errorf("metrics Service does not lead to the operations port: %+v", ms)
	}
	cmd := exec.Command(helmBin(t), "template", "shop", "waitroom", "--kube-version", kubeVersion, "--set", "ops.port=8080")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "ops.port must differ") {
		t.Errorf("ops.port on the visitors' port rendered: %v\n%s", err, out)
	}
	startAsRendered(t, r, bin)
}

func TestChartSentinel(t *testing.T) {
	bin := deploytest.Binary(t)
	r := render(t, []string{"values/sentinel.yaml"})
	checkCommon(t, r, deploytest.Flags(t, bin))
	c := r.container(t)
	e := env(c)
	if e["WAITROOM_REDIS_SENTINEL"].Value != "mymaster" {
		t.Errorf("WAITROOM_REDIS_SENTINEL %q", e["WAITROOM_REDIS_SENTINEL"].Value)
	}
	if ref := e["WAITROOM_REDIS"].ValueFrom; ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != "waitroom-redis" {
		t.Errorf("WAITROOM_REDIS is not from Secret waitroom-redis: %+v", e["WAITROOM_REDIS"])
	}
	// The rooms file: a ConfigMap, mounted where WAITROOM_ROOMS points, and
	// its checksum on the pod so a change rolls the pods.
	cm := r.configMaps["shop-waitroom-rooms"]
	if cm == nil || cm.Data["rooms.yaml"] == "" {
		t.Fatalf("no rooms ConfigMap: %v", r.configMaps)
	}
	if r.deployment.Spec.Template.Annotations["checksum/rooms"] == "" {
		t.Error("no checksum/rooms annotation on the pod template")
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		if m.Name == "rooms" && filepath.Join(m.MountPath, "rooms.yaml") == e["WAITROOM_ROOMS"].Value && m.ReadOnly {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("WAITROOM_ROOMS %q is not in the read-only rooms mount %+v", e["WAITROOM_ROOMS"].Value, c.VolumeMounts)
	}
	// A change of the rooms rolls the pods: the checksum follows the content.
	other := render(t, []string{"values/sentinel.yaml"}, "rooms.content=rooms: {}")
	if other.deployment.Spec.Template.Annotations["checksum/rooms"] == r.deployment.Spec.Template.Annotations["checksum/rooms"] {
		t.Error("checksum/rooms does not change with the rooms")
	}
	sm := r.serviceMonitor
	if sm == nil || len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" {
		t.Fatalf("ServiceMonitor %+v", sm)
	}
	ms := r.services["shop-waitroom-metrics"]
	if ms == nil || !subset(sm.Spec.Selector.MatchLabels, ms.Labels) || ms.Spec.Ports[0].Name != "metrics" ||
		ms.Spec.Ports[0].TargetPort != intstr.FromString("ops") || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor does not select the metrics Service leading to the operations port %+v", ms)
	}
	startAsRendered(t, r, bin)
}

func TestChartCluster(t *testing.T) {
	bin := deploytest.Binary(t)
	r := render(t, []string{"values/cluster.yaml"})
	checkCommon(t, r, deploytest.Flags(t, bin))
	e := env(r.container(t))
	if e["WAITROOM_REDIS_CLUSTER"].Value != "true" || e["WAITROOM_REDIS_CLIENT"].Value != "go-redis" {
		t.Errorf("cluster env: %+v", e)
	}
	if e["WAITROOM_TRUSTED_PROXIES"].Value != "10.0.0.0/8" || e["WAITROOM_MAX_CONNS"].Value != "40000" {
		t.Errorf("config map to env: %+v", e)
	}
	if r.deployment.Spec.Replicas != nil {
		t.Error("replicas set while the HPA scales")
	}
	if r.hpa == nil || r.hpa.Spec.ScaleTargetRef.Name != r.deployment.Name || r.hpa.Spec.MinReplicas == nil || *r.hpa.Spec.MinReplicas != 3 {
		t.Errorf("HPA %+v", r.hpa)
	}
	if s := r.services[r.deployment.Name]; s.Spec.Type != corev1.ServiceTypeLoadBalancer {
		t.Errorf("Service type %s", s.Spec.Type)
	}
	if r.container(t).EnvFrom[0].SecretRef.Name != "waitroom-keys" {
		t.Errorf("envFrom %+v", r.container(t).EnvFrom)
	}
	startAsRendered(t, r, bin)
}

// A chart-made Secret carries only WAITROOM_* names; a wrong one fails the
// render, and a flag the binary does not have fails the test.
func TestChartSecretAndConfigNames(t *testing.T) {
	bin := deploytest.Binary(t)
	flags := deploytest.Flags(t, bin)
	r := render(t, nil, "secrets.create=true", "secrets.values.WAITROOM_SECRET=s3cr3t-s3cr3t-s3cr3t", "secrets.values.WAITROOM_ADMIN_KEY=k3y-k3y-k3y-k3y-k3y")
	checkCommon(t, r, flags)
	if s := r.secrets["shop-waitroom"]; s == nil || s.StringData["WAITROOM_SECRET"] == "" {
		t.Fatalf("no chart-made Secret: %v", r.secrets)
	}
	cmd := exec.Command(helmBin(t), "template", "shop", "waitroom", "--kube-version", kubeVersion, "--set", "secrets.create=true", "--set", "secrets.values.SECRET=x")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "not a WAITROOM_* variable") {
		t.Errorf("a Secret key without WAITROOM_ rendered: %v\n%s", err, out)
	}
	if _, ok := flags["drain-window"]; !ok {
		t.Fatal("the binary has no -drain-window")
	}
}

// The strict decoding is what catches a misspelt field: one put into the
// pod's securityContext through the values must fail it.
func TestChartStrictDecodingCatchesMisspeltFields(t *testing.T) {
	_, errs := decodeAll(t, helmTemplate(t, nil, "podSecurityContext.runAsNonRot=true"))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "runAsNonRot") {
		t.Fatalf("want one error naming runAsNonRot, got %v", errs)
	}
}

// In gateway mode (-upstream) the visitors' port's root is the app's, its
// /healthz too: the probes must reach waitroom all the same. The app here
// is down, so a probe that went to it would see 502.
func TestChartUpstream(t *testing.T) {
	bin := deploytest.Binary(t)
	r := render(t, nil, "config.upstream=http://127.0.0.1:1")
	checkCommon(t, r, deploytest.Flags(t, bin))
	if e := env(r.container(t)); e["WAITROOM_UPSTREAM"].Value != "http://127.0.0.1:1" {
		t.Fatalf("WAITROOM_UPSTREAM %q", e["WAITROOM_UPSTREAM"].Value)
	}
	startAsRendered(t, r, bin)
}
