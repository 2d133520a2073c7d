package host

import (
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/host/awshost"
	"github.com/sortie-run/sortie/host/builtin"
	"github.com/sortie-run/sortie/host/gcphost"
	"github.com/sortie-run/sortie/internal/loopback"
	"github.com/sortie-run/sortie/pricing"
)

// Config is everything a [Host] is built from. Errors about a field are
// [*sortie.ValidationError]s naming it as written here ("ConfigEnv",
// "API.PublicURL").
type Config struct {
	// StateDir holds the embedded state (the SQLite control plane
	// [StateFile] and the attempts' logs in logs/) and the host's keys,
	// each created with mode 0600 on first use: [LocalKeyFile] (inline
	// configuration, A2A push tokens), [WebhookKeysFile] and
	// [CallbackKeysFile]. With AWS.Table it holds only the keys, which in
	// production are secrets mounted the same in every replica. Required.
	StateDir string
	// AWS keeps runs in a DynamoDB table and launches attempts on a Lambda
	// function, sealing inline configuration with its KMS keyring (see
	// package host/awshost). Optional; without AWS.Table runs are kept in
	// StateDir and attempts run on local workers. With AWS.Table but no
	// AWS.Function (and no Launcher) the host launches nothing: it reads,
	// cancels and configures runs.
	AWS awshost.Config
	// GCP launches attempts on a Cloud Run Job or service (GCP.Job,
	// GCP.Service) and seals inline configuration with a Cloud KMS keyring
	// (GCP.KMSKeys), the one the Cloud Run workers open it with (see
	// package host/gcphost). Optional; works with either control plane,
	// and with API.WorkerCallbacks the workers need no access to it.
	GCP gcphost.Config
	// Launcher launches attempts instead of the local, Lambda or Cloud Run
	// launcher. Optional.
	Launcher sortie.Launcher
	// Agents are the agents runs may name. Optional; defaults to the
	// built-in ones (package host/builtin). An exec agent ("exec:ID") needs
	// Runtimes to name its runtime.
	Agents sortie.Agents
	// Catalog, when set, is what the engine resolves agent names with at
	// each submission and admission (a catalog that reloads its agents
	// applies a new concurrency limit or budget without a restart); it
	// should hold the agents of Agents. Optional; defaults to Agents.
	Catalog sortie.AgentCatalog
	// Registry holds the Go handlers ("go:NAME") of the host's local
	// workers. Optional; defaults to the built-in ones.
	Registry *functions.Registry
	// Runtimes is the exec runtimes allowlist, a JSON file
	// ([functions.LoadExecRuntimes]); worker subprocesses get its absolute
	// path. Optional; without it exec agents are refused.
	Runtimes string
	// InProcess runs attempts in goroutines of this process instead of
	// WorkerCommand subprocesses. Optional; not with AWS.Table.
	InProcess bool
	// LocalWorkers runs attempts on local worker processes also with
	// AWS.Table (a fleet of hosts on one table, each running its own
	// workers): warm workers are claimed and reported by this host, which
	// writes the table; with ProcessPerAttempt the workers report over
	// worker callbacks to this host, so an API with WorkerCallbacks is
	// required (the host's AWS credentials are never a worker's).
	// Optional; not with AWS.Function.
	LocalWorkers bool
	// ProcessPerAttempt runs each local attempt as a WorkerCommand
	// subprocess of its own, which claims and reports the attempt itself
	// and outlives this host (as short-lived commands such as submit
	// need). Optional; by default attempts run on warm worker processes
	// (WorkerCommand with the argument "--session", reused attempt after
	// attempt, claimed and reported by this host) that stop when the
	// host closes.
	ProcessPerAttempt bool
	// OwnRunsOnly is [sortie.EngineOptions.OwnRunsOnly]: a host that lives
	// only as long as the run it submits or follows launches no other run
	// on its warm workers. Optional.
	OwnRunsOnly bool
	// WorkerPoolSize is the most warm worker processes alive at once (and
	// so the most local attempts running at once; the others wait for
	// one), also for each exec runtime of the session protocol; at most
	// [functions.MaxPoolSize]. Optional; defaults to
	// [functions.DefaultPoolSize].
	WorkerPoolSize int
	// WorkerRecycleAfter is how many attempts a warm worker process runs
	// before a new one replaces it. Optional; defaults to 0: never.
	WorkerRecycleAfter int
	// WorkerCommand is the command of the local worker processes: the
	// sortie CLI's "worker", which rebuilds this Config from the variables
	// the host passes it ([EnvStateDir], [EnvRuntimes], [EnvConfigEnv], the
	// destination policy's and OpenTelemetry's). With ProcessPerAttempt
	// each attempt runs it once, the invocation on its stdin, and it
	// claims and reports the attempt; by default it runs with the extra
	// argument "--session" as a warm worker (functions.SessionVersion).
	// Optional; defaults to this executable with the argument "worker".
	WorkerCommand []string
	// WorkerLogLevel is the log level of worker subprocesses (debug, info,
	// warn or error), whose logs go to StateDir/logs. Optional; defaults
	// to info.
	WorkerLogLevel string
	// ConfigEnv turns inline configuration on: the names of the variables
	// a run's configuration may set, 1-128 characters of A-Z, a-z, 0-9 and
	// '_', not starting with a digit. The engine seals configuration with
	// StateDir's local key (with AWS.KMSKeys or GCP.KMSKeys, that keyring,
	// whose workers have their own allowlist), the local workers open it.
	// Optional; off when empty.
	ConfigEnv []string
	// ConfigRefs is the host's allowlist of configuration references, a
	// JSON file ([functions.LoadConfigRefs]): submissions' config_refs
	// are checked against it, and local workers resolve them through it
	// when each attempt executes. Worker subprocesses get its absolute
	// path and the host's values of the variables its "env" references
	// read, nothing else of the host's environment, so they resolve
	// "env" and "file" references; "aws_secret" and "gcp_secret" ones
	// need workers with credentials (InProcess, Lambda, Cloud Run).
	// Optional; without it every reference is refused.
	ConfigRefs string
	// ConfigRefSecrets are the secret stores of the allowlist's
	// "aws_secret" and "gcp_secret" references, by source
	// (functions.SourceAWSSecret ...), for in-process workers. Optional;
	// defaults to Secrets Manager and Secret Manager clients with the
	// process's default credentials, made when first used.
	ConfigRefSecrets map[string]functions.SecretSource
	// Destinations is the destination policy of outbound calls: webhooks
	// and the HTTP client handlers get (local workers). Optional; nil is
	// the zero policy, which allows no destination: list the hosts, or
	// destination.PublicHTTPS() for HTTPS to any public address.
	Destinations *destination.Policy
	// Models is the host's model policy: submissions are checked against
	// it (sortie.EngineOptions.Models) and local workers apply it
	// (functions.Worker.Models; worker subprocesses get it in
	// sortie.EnvAllowedModels and its siblings). Optional; nil allows
	// every model.
	Models *sortie.ModelPolicy
	// AllowTools and AllowConnections are the local workers'
	// authorization allowlists: the tool names handlers may call
	// (functions.Call.AuthorizeTool) and the connection references they
	// may open (functions.Call.Connect); worker subprocesses get them in
	// functions.EnvAllowTools and EnvAllowConnections. Optional; empty
	// refuses every tool call and connection.
	AllowTools, AllowConnections []string
	// WebhookSteps turns webhook steps (functions.Call.Webhook) on for
	// local workers: they go through Destinations, as the handlers' HTTP
	// client does. Optional; off by default (every webhook step is
	// refused).
	WebhookSteps bool
	// WebhookStepSecretFile holds the secret ("whsec_" and base64, see
	// crypto/sign) that signs webhook steps' requests; worker
	// subprocesses get its absolute path. Optional; unsigned without it.
	WebhookStepSecretFile string
	// ReconcileInterval is how often [Host.RunReconciler] and [Host.Serve]
	// retry or fail runs whose lease expired. Optional; defaults to 1 s.
	ReconcileInterval time.Duration
	// Retention is how long a terminal run is kept after its last update:
	// the reconciler ([Host.RunReconciler], [Host.Serve]) deletes older
	// ones with their payload objects (see [Host.ExpireRuns]). Optional;
	// 0 keeps runs forever; else at least 1 minute.
	Retention time.Duration
	// Prices prices every run the host shows (package pricing): the
	// default table, or a deployment's table with its overrides.
	// Optional; defaults to pricing.Default().
	Prices *pricing.Table
	// PayloadBucket is the gocloud.dev/blob URL of the bucket keeping
	// payloads over their inline limits, e.g. "s3://BUCKET?region=eu-west-1".
	// Optional; defaults to StateDir/payloads ([PayloadDir]) for local
	// workers (sealed with StateDir's local key). A host launching on
	// AWS.Function or Cloud Run keeps payloads only here, sealed with the
	// keyring its workers hold (they get presigned URLs); other hosts
	// keep none, and refuse a submission over the inline limit.
	PayloadBucket string
	// PayloadLimits are the payload store's per-payload and per-run
	// maxima, in bytes: MaxPayloadBytes at most 1 GiB, MaxRunBytes at most
	// 16 GiB and, both set, not below MaxPayloadBytes. Optional; default
	// 100 MiB and 256 MiB.
	PayloadLimits sortie.PayloadLimits
	// API makes the host a server: [New] builds the HTTP API, A2A, push
	// delivery and worker callbacks, and [Host.Serve] serves them.
	// Optional; without it the host only runs the engine.
	API *API
	// Logger receives the host's logs. Optional; defaults to
	// slog.Default().
	Logger *slog.Logger
}

// API configures a host's server.
type API struct {
	// Tokens are the bearer tokens the client API accepts, each at least
	// 16 bytes. Optional; without any the API serves loopback clients only
	// and [Host.Serve] refuses a listener that is not loopback.
	Tokens []string
	// AnyClient serves an API without tokens to any client and on any
	// address. Optional; defaults to false.
	AnyClient bool
	// PublicURL is the absolute http(s) URL clients reach this host at,
	// used in the A2A agent card. Optional; defaults to each card
	// request's scheme and Host.
	PublicURL string
	// WorkerCallbacks makes workers report over signed HTTP callbacks to
	// CallbackURL instead of writing the control plane, with the keys in
	// StateDir's [CallbackKeysFile]. Optional.
	WorkerCallbacks bool
	// CallbackURL is the absolute http(s) URL workers reach this host at,
	// the base of the callback routes: https, or http on loopback only
	// unless InsecureHTTPCallbacks. Optional; defaults to PublicURL, and
	// one of them is required with WorkerCallbacks.
	CallbackURL string
	// InsecureHTTPCallbacks allows a plain-http CallbackURL off loopback:
	// callbacks are signed, but their bodies (events, results) then cross
	// the network unencrypted. Optional; defaults to false (refused).
	InsecureHTTPCallbacks bool
	// TriggerRules route CloudEvents POSTed to the API's events route
	// (server.EventsPath, behind the API's authentication) to runs,
	// deduplicated on each event's (source, id). Optional; without them
	// the route answers 404.
	TriggerRules *triggers.Rules
	// FollowPoll is how often followed runs are read for changes made by
	// other processes. Optional; defaults to 200 ms, or 5 s on DynamoDB
	// when the table has a stream, which wakes followers (package
	// controlplane/dynamo/dynamostream).
	FollowPoll time.Duration
	// UI serves the web UI (package server/ui) at /ui/: a client of the
	// API with the same tokens (or loopback clients only without them).
	// Optional; defaults to false.
	UI bool
	// Metrics serves GET /metrics behind the API's authentication: the
	// handler of [NewPrometheus]. Optional; without it the route answers
	// 404.
	Metrics http.Handler
	// ShutdownGrace is how long [Host.Serve] waits, once its context ends,
	// for requests in flight and webhook deliveries. Optional; defaults to
	// 30 s.
	ShutdownGrace time.Duration
}

// configName is the rule of a variable name in ConfigEnv.
var configName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// withDefaults returns c with its optional fields filled.
func (c Config) withDefaults() Config {
	if c.Agents == nil {
		c.Agents = builtin.Agents()
	}
	if c.Registry == nil {
		c.Registry = builtin.Registry()
	}
	if c.Destinations == nil {
		c.Destinations = &destination.Policy{}
	}
	if c.ReconcileInterval == 0 {
		c.ReconcileInterval = time.Second
	}
	if c.WorkerLogLevel == "" {
		c.WorkerLogLevel = "info"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Prices == nil {
		c.Prices = pricing.Default()
	}
	if c.API != nil {
		api := *c.API
		api.ShutdownGrace = cmpOr(api.ShutdownGrace, 30*time.Second)
		c.API = &api
	}
	return c
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Validate checks c without opening anything but the Runtimes and
// ConfigRefs files. It returns a [*sortie.ValidationError] naming the
// field.
func (c *Config) Validate() error {
	switch {
	case strings.TrimSpace(c.StateDir) == "":
		return sortie.Invalidf("StateDir", "empty: name the host's directory")
	case c.ReconcileInterval < 0:
		return sortie.Invalidf("ReconcileInterval", "%v: must be positive", c.ReconcileInterval)
	case c.InProcess && c.AWS.Table != "":
		return sortie.Invalidf("InProcess", "runs attempts in this process; with AWS.Table they run on AWS.Function or LocalWorkers")
	case c.InProcess && c.ProcessPerAttempt:
		return sortie.Invalidf("ProcessPerAttempt", "runs each attempt in a process of its own; InProcess runs them in this one: set one")
	case c.WorkerPoolSize < 0 || c.WorkerPoolSize > functions.MaxPoolSize:
		return sortie.Invalidf("WorkerPoolSize", "%d outside 0..%d (0: the default, %d)", c.WorkerPoolSize, functions.MaxPoolSize, functions.DefaultPoolSize)
	case c.WorkerRecycleAfter < 0:
		return sortie.Invalidf("WorkerRecycleAfter", "%d must not be negative (0: never)", c.WorkerRecycleAfter)
	case c.LocalWorkers && c.AWS.Function != "":
		return sortie.Invalidf("LocalWorkers", "runs attempts on local workers; with AWS.Function they run on Lambda: choose one")
	}
	if err := c.validateGCP(); err != nil {
		return err
	}
	if err := c.validateRetention(); err != nil {
		return err
	}
	if c.WorkerLogLevel != "" {
		var lvl slog.Level
		if err := lvl.UnmarshalText([]byte(c.WorkerLogLevel)); err != nil {
			return sortie.Invalidf("WorkerLogLevel", "%q: want debug, info, warn or error", c.WorkerLogLevel)
		}
	}
	for _, name := range c.ConfigEnv {
		if !configName.MatchString(name) {
			return sortie.Invalidf("ConfigEnv", "%q: variable names are 1-128 characters of A-Z, a-z, 0-9 and '_', not starting with a digit", name)
		}
	}
	if err := c.Destinations.Validate(); err != nil {
		return sortie.Invalidf("Destinations", "%v", err)
	}
	if err := c.Models.Validate(); err != nil {
		return sortie.Invalidf("Models", "%v", err)
	}
	if _, err := c.webhookExecutor(); err != nil {
		return err
	}
	if err := c.checkRuntimes(); err != nil {
		return err
	}
	if err := c.checkAgents(); err != nil {
		return err
	}
	if err := c.checkConfigRefs(); err != nil {
		return err
	}
	if err := c.validatePayloads(); err != nil {
		return err
	}
	return c.API.validate(c)
}

// checkRuntimes loads the exec runtimes allowlist and refuses an exec
// agent it does not name, and a Go agent whose handler the host's local
// workers lack (checkGoRuntime), before anything is stored.
func (c *Config) checkRuntimes() error {
	var rt map[string]functions.ExecSpec
	if c.Runtimes != "" {
		var err error
		if rt, err = functions.LoadExecRuntimes(c.Runtimes); err != nil {
			return sortie.Invalidf("Runtimes", "%v", err)
		}
	}
	for _, m := range c.Agents {
		if err := c.checkGoRuntime(m); err != nil {
			return err
		}
		id, ok := strings.CutPrefix(m.Runtime, "exec:")
		if !ok {
			continue
		}
		if c.Runtimes == "" {
			return sortie.Invalidf("Runtimes", "agent %s runs %s: name it in an exec runtimes allowlist (Runtimes)", m.Name, m.Runtime)
		}
		if _, ok := rt[id]; !ok {
			return sortie.Invalidf("Runtimes", "agent %s runs %s, which %s does not name", m.Name, m.Runtime, c.Runtimes)
		}
	}
	return nil
}

// checkGoRuntime refuses agent m when it runs "go:NAME" on this host's
// local workers and Registry has no handler NAME: its runs would all be
// rejected by the worker. Workers elsewhere (Lambda, Cloud Run) have
// registries of their own, which the host cannot see.
func (c *Config) checkGoRuntime(m sortie.Manifest) error {
	name, ok := strings.CutPrefix(m.Runtime, "go:")
	if !ok || c.Registry == nil || !c.localWorkers() {
		return nil
	}
	if _, ok := c.Registry.Lookup(name); !ok {
		return sortie.Invalidf("agent.runtime", "agent %s runs %s: this host's workers have no Go handler %q (built in: %s)", m.Name, m.Runtime, name, strings.Join(c.Registry.Names(), ", "))
	}
	return nil
}

func (a *API) validate(c *Config) error {
	if a == nil {
		return nil
	}
	for i, t := range a.Tokens {
		if len(t) < 16 {
			return sortie.Invalidf("API.Tokens", "token %d is %d bytes; at least 16 are required", i+1, len(t))
		}
	}
	if c.LocalWorkers && c.AWS.Table != "" && c.ProcessPerAttempt && !a.WorkerCallbacks {
		return sortie.Invalidf("LocalWorkers", "on AWS.Table a worker process per attempt reports over worker callbacks (API.WorkerCallbacks): the host's AWS credentials are never a worker's")
	}
	if !a.WorkerCallbacks {
		return nil
	}
	base := a.callbackBase()
	if base == "" {
		return sortie.Invalidf("API.CallbackURL", "required with API.WorkerCallbacks (or API.PublicURL): the URL workers reach this host at")
	}
	if err := sortie.CheckHTTPURL("API.CallbackURL", base); err != nil {
		return err
	}
	if u, _ := url.Parse(base); u.Scheme == "http" && !loopback.URL(base) && !a.InsecureHTTPCallbacks {
		return sortie.Invalidf("API.CallbackURL", "%s is plain HTTP off loopback: callbacks carry events and results; use https, or set API.InsecureHTTPCallbacks", sortie.SafeURL(base))
	}
	if c.AWS.Function != "" && loopback.URL(base) {
		return sortie.Invalidf("API.CallbackURL", "%s is loopback: workers on AWS.Function cannot reach it; set API.PublicURL to this host's address as the function sees it", sortie.SafeURL(base))
	}
	if c.GCP.Launches() && c.GCP.RunEndpoint == "" && loopback.URL(base) {
		return sortie.Invalidf("API.CallbackURL", "%s is loopback: workers on Cloud Run cannot reach it; set API.PublicURL to this host's address as Cloud Run sees it", sortie.SafeURL(base))
	}
	return nil
}

// callbackBase is CallbackURL, else PublicURL.
func (a *API) callbackBase() string {
	if a.CallbackURL != "" {
		return a.CallbackURL
	}
	return a.PublicURL
}

// CheckListen refuses an address that is not loopback ([Host.Serve]'s
// listener, or one about to be listened on) for an API without Tokens
// unless AnyClient is set: such an API is open. It returns a
// [*sortie.ValidationError] naming API.Tokens.
func (a *API) CheckListen(addr string) error {
	if len(a.Tokens) > 0 || a.AnyClient || loopback.Host(addr) {
		return nil
	}
	return sortie.Invalidf("API.Tokens", "none, and %s is not a loopback address: set API.Tokens, or API.AnyClient to serve an open API", addr)
}
