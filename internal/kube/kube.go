// Package kube is the client of the Kubernetes API that sbx links: a REST
// client of client-go over the few API groups sbx uses (core/v1, node/v1,
// storage/v1), shaped as client-go's typed clients are (Client.CoreV1().
// Pods(ns).Get(…)). Not client-go's typed clientset: any of its typed
// clients links every API group's types through its scheme package (37 MB
// of binary for the core/v1 client alone, 18 MB for a REST client over
// core/v1's types: docs/BENCHMARKS.md).
package kube

import (
	"context"
	"io"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// scheme knows the types of the groups sbx uses, and no other.
var (
	scheme = runtime.NewScheme()
	codecs = serializer.NewCodecFactory(scheme)
	// ParameterCodec encodes a request's options as its query.
	ParameterCodec = runtime.NewParameterCodec(scheme)
)

func init() {
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, nodev1.AddToScheme, storagev1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
}

// Client reaches one cluster's API server.
type Client struct {
	Config              *rest.Config // what it was made from, for exec streams
	core, node, storage *rest.RESTClient
}

// Config reads a kubeconfig, or the in-cluster credentials when path is "".
func Config(path string) (*rest.Config, error) {
	if path != "" {
		return clientcmd.BuildConfigFromFlags("", path)
	}
	return rest.InClusterConfig()
}

// New returns a client over rc: one HTTP client (its connections) for
// every group.
func New(rc *rest.Config) (*Client, error) {
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, err
	}
	c := &Client{Config: rc}
	for _, g := range []struct {
		client **rest.RESTClient
		gv     schema.GroupVersion
		path   string
	}{
		{&c.core, corev1.SchemeGroupVersion, "/api"},
		{&c.node, nodev1.SchemeGroupVersion, "/apis"},
		{&c.storage, storagev1.SchemeGroupVersion, "/apis"},
	} {
		cfg := rest.CopyConfig(rc)
		cfg.GroupVersion, cfg.APIPath = &g.gv, g.path
		cfg.NegotiatedSerializer = codecs.WithoutConversion()
		if cfg.UserAgent == "" {
			cfg.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		rcl, err := rest.RESTClientForConfigAndClient(cfg, hc)
		if err != nil {
			return nil, err
		}
		*g.client = rcl
	}
	return c, nil
}

// Resource is one kind of object of the API, in a namespace or the
// cluster's ("").
type Resource[T, L runtime.Object] struct {
	client   *rest.RESTClient
	ns, name string // the namespace, the resource's plural name
	item     func() T
	list     func() L
}

func (r Resource[T, L]) req(verb string) *rest.Request {
	return r.client.Verb(verb).NamespaceIfScoped(r.ns, r.ns != "").Resource(r.name)
}

// Get reads the object named name.
func (r Resource[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	out := r.item()
	err := r.req("GET").Name(name).VersionedParams(&opts, ParameterCodec).Do(ctx).Into(out)
	return out, err
}

// Create makes obj and answers it as the server has it.
func (r Resource[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	out := r.item()
	err := r.req("POST").VersionedParams(&opts, ParameterCodec).Body(obj).Do(ctx).Into(out)
	return out, err
}

// Delete deletes the object named name.
func (r Resource[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.req("DELETE").Name(name).Body(&opts).Do(ctx).Error()
}

// DeleteCollection deletes the objects listOpts selects.
func (r Resource[T, L]) DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error {
	return r.req("DELETE").VersionedParams(&listOpts, ParameterCodec).Body(&opts).Do(ctx).Error()
}

// List lists the objects opts selects.
func (r Resource[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := r.list()
	err := r.req("GET").VersionedParams(&opts, ParameterCodec).Do(ctx).Into(out)
	return out, err
}

// Watch follows the objects opts selects.
func (r Resource[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.req("GET").VersionedParams(&opts, ParameterCodec).Watch(ctx)
}

func resource[T, L runtime.Object](c *rest.RESTClient, ns, name string, item func() T, list func() L) Resource[T, L] {
	return Resource[T, L]{client: c, ns: ns, name: name, item: item, list: list}
}

// Core is core/v1.
type Core struct{ c *rest.RESTClient }

// CoreV1 is the client's core/v1.
func (c *Client) CoreV1() Core { return Core{c.core} }

func (c Core) Pods(ns string) Resource[*corev1.Pod, *corev1.PodList] {
	return resource(c.c, ns, "pods", func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} })
}

func (c Core) PersistentVolumeClaims(ns string) Resource[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList] {
	return resource(c.c, ns, "persistentvolumeclaims", func() *corev1.PersistentVolumeClaim { return &corev1.PersistentVolumeClaim{} },
		func() *corev1.PersistentVolumeClaimList { return &corev1.PersistentVolumeClaimList{} })
}

func (c Core) PersistentVolumes() Resource[*corev1.PersistentVolume, *corev1.PersistentVolumeList] {
	return resource(c.c, "", "persistentvolumes", func() *corev1.PersistentVolume { return &corev1.PersistentVolume{} },
		func() *corev1.PersistentVolumeList { return &corev1.PersistentVolumeList{} })
}

func (c Core) Namespaces() Resource[*corev1.Namespace, *corev1.NamespaceList] {
	return resource(c.c, "", "namespaces", func() *corev1.Namespace { return &corev1.Namespace{} }, func() *corev1.NamespaceList { return &corev1.NamespaceList{} })
}

func (c Core) ServiceAccounts(ns string) Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList] {
	return resource(c.c, ns, "serviceaccounts", func() *corev1.ServiceAccount { return &corev1.ServiceAccount{} },
		func() *corev1.ServiceAccountList { return &corev1.ServiceAccountList{} })
}

func (c Core) Nodes() Resource[*corev1.Node, *corev1.NodeList] {
	return resource(c.c, "", "nodes", func() *corev1.Node { return &corev1.Node{} }, func() *corev1.NodeList { return &corev1.NodeList{} })
}

func (c Core) Events(ns string) Resource[*corev1.Event, *corev1.EventList] {
	return resource(c.c, ns, "events", func() *corev1.Event { return &corev1.Event{} }, func() *corev1.EventList { return &corev1.EventList{} })
}

// PodLogs streams a pod's log.
func (c Core) PodLogs(ctx context.Context, ns, name string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	return c.c.Get().Namespace(ns).Resource("pods").Name(name).SubResource("log").VersionedParams(opts, ParameterCodec).Stream(ctx)
}

// ExecURL is the URL of a pods/exec stream (remotecommand's).
func (c Core) ExecURL(ns, name string, opts *corev1.PodExecOptions) *url.URL {
	return c.c.Post().Namespace(ns).Resource("pods").Name(name).SubResource("exec").VersionedParams(opts, ParameterCodec).URL()
}

// Node is node/v1.
type Node struct{ c *rest.RESTClient }

// NodeV1 is the client's node/v1.
func (c *Client) NodeV1() Node { return Node{c.node} }

func (c Node) RuntimeClasses() Resource[*nodev1.RuntimeClass, *nodev1.RuntimeClassList] {
	return resource(c.c, "", "runtimeclasses", func() *nodev1.RuntimeClass { return &nodev1.RuntimeClass{} }, func() *nodev1.RuntimeClassList { return &nodev1.RuntimeClassList{} })
}

// Storage is storage/v1.
type Storage struct{ c *rest.RESTClient }

// StorageV1 is the client's storage/v1.
func (c *Client) StorageV1() Storage { return Storage{c.storage} }

func (c Storage) StorageClasses() Resource[*storagev1.StorageClass, *storagev1.StorageClassList] {
	return resource(c.c, "", "storageclasses", func() *storagev1.StorageClass { return &storagev1.StorageClass{} },
		func() *storagev1.StorageClassList { return &storagev1.StorageClassList{} })
}
