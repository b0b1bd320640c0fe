package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/logging"
)

// loadConfig is the deployed functions' AWS configuration, read from the
// environment Lambda gives a function, as config.LoadDefaultConfig reads
// that environment:
//
//   - the region: AWS_REGION, else AWS_DEFAULT_REGION; required;
//   - the function role's credentials: AWS_ACCESS_KEY_ID and
//     AWS_SECRET_ACCESS_KEY (required), AWS_SESSION_TOKEN, AWS_ACCOUNT_ID;
//   - the endpoints: AWS_ENDPOINT_URL for every service and
//     AWS_ENDPOINT_URL_<SERVICE> (AWS_ENDPOINT_URL_DYNAMODB,
//     AWS_ENDPOINT_URL_SFN) for one, unless
//     AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true. A variable that is set
//     but empty is no endpoint: template.yaml declares
//     AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_SFN empty, for sam
//     local, and the deployed clients use the services' default
//     endpoints;
//   - the retries and the user agent: AWS_MAX_ATTEMPTS, AWS_RETRY_MODE,
//     AWS_SDK_UA_APP_ID;
//   - AWS_CA_BUNDLE: a PEM file of the certificate authorities TLS
//     connections trust instead of the system's.
//
// It does not use the config package: importing it links the SDK's STS,
// SSO, SSO OIDC and sign-in clients into every function, for credential
// sources a Lambda function does not use, and their package
// initialisation took a third of a function's start
// (bench/profiles/coldstart.md). Shared config files and profiles, the
// instance metadata service and the other credential sources are not
// read. An SDK setting that would change what the clients do and that
// this loader does not read (a profile, FIPS or dual-stack endpoints,
// checksum or compression settings, ...) is refused rather than ignored, as are a missing region
// or credentials: the function fails its init, which Lambda reports,
// instead of failing every request.
func loadConfig(env Env) (aws.Config, error) {
	for _, name := range unreadSettings {
		if env(name) != "" {
			return aws.Config{}, fmt.Errorf("AWS configuration: environment variable %s is set, but the functions do not read it (internal/app.loadConfig)", name)
		}
	}
	region := firstSet(env, "AWS_REGION", "AWS_DEFAULT_REGION")
	if region == "" {
		return aws.Config{}, fmt.Errorf("AWS configuration: environment variable AWS_REGION is required")
	}
	creds, err := envCredentials(env)
	if err != nil {
		return aws.Config{}, fmt.Errorf("AWS configuration: %w", err)
	}
	ignoreEndpoints, err := boolean(env, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", false)
	if err != nil {
		return aws.Config{}, fmt.Errorf("AWS configuration: %w", err)
	}
	httpClient, err := newHTTPClient(env("AWS_CA_BUNDLE"))
	if err != nil {
		return aws.Config{}, fmt.Errorf("AWS configuration: environment variable AWS_CA_BUNDLE: %w", err)
	}
	cfg := aws.Config{
		Region:        region,
		Credentials:   creds,
		HTTPClient:    httpClient,
		Logger:        logging.NewStandardLogger(os.Stderr),
		AppID:         env("AWS_SDK_UA_APP_ID"),
		ConfigSources: []any{endpointSource{env: env, ignore: ignoreEndpoints}},
	}
	if u := env("AWS_ENDPOINT_URL"); u != "" && !ignoreEndpoints {
		cfg.BaseEndpoint = aws.String(u)
	}
	if v := env("AWS_MAX_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return aws.Config{}, fmt.Errorf("AWS configuration: environment variable AWS_MAX_ATTEMPTS must be a positive integer, got %q", v)
		}
		cfg.RetryMaxAttempts = n
	}
	if v := env("AWS_RETRY_MODE"); v != "" {
		if cfg.RetryMode, err = aws.ParseRetryMode(v); err != nil {
			return aws.Config{}, fmt.Errorf("AWS configuration: environment variable AWS_RETRY_MODE: %w", err)
		}
	}
	return cfg, nil
}

// unreadSettings are the SDK's environment settings that loadConfig
// does not read and that would change the clients' behaviour if
// config.LoadDefaultConfig read them: a profile (which takes precedence
// over the environment's credentials), endpoint variants, TLS, checksums,
// compression, signing. Lambda sets none of them.
var unreadSettings = []string{
	"AWS_PROFILE",
	"AWS_DEFAULT_PROFILE",
	"AWS_USE_FIPS_ENDPOINT",
	"AWS_USE_DUALSTACK_ENDPOINT",
	"AWS_DEFAULTS_MODE",
	"AWS_ACCOUNT_ID_ENDPOINT_MODE",
	"AWS_ENABLE_ENDPOINT_DISCOVERY",
	"AWS_REQUEST_CHECKSUM_CALCULATION",
	"AWS_RESPONSE_CHECKSUM_VALIDATION",
	"AWS_DISABLE_REQUEST_COMPRESSION",
	"AWS_REQUEST_MIN_COMPRESSION_SIZE_BYTES",
	"AWS_DISABLE_CLOCK_SKEW_CORRECTION",
	"AWS_AUTH_SCHEME_PREFERENCE",
}

// otherCredentialSources are variables of credential sources loadConfig
// does not read, named when the environment has no credentials.
var otherCredentialSources = []string{
	"AWS_CONTAINER_CREDENTIALS_FULL_URI",
	"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
	"AWS_WEB_IDENTITY_TOKEN_FILE",
	"AWS_ROLE_ARN",
	"AWS_SHARED_CREDENTIALS_FILE",
	"AWS_CONFIG_FILE",
}

// newHTTPClient is the clients' HTTP client, the SDK's default one; with
// caBundle (a PEM file), TLS trusts the certificate authorities it holds
// instead of the system's, as the config package does with
// AWS_CA_BUNDLE. The file is read here, once.
func newHTTPClient(caBundle string) (*awshttp.BuildableClient, error) {
	client := awshttp.NewBuildableClient()
	if caBundle == "" {
		return client, nil
	}
	pem, err := os.ReadFile(caBundle)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no PEM certificate in %s", caBundle)
	}
	return client.WithTransportOptions(func(tr *http.Transport) {
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		tr.TLSClientConfig.RootCAs = roots
	}), nil
}

// envCredentials are the credentials Lambda puts in the environment: the
// function role's temporary credentials.
func envCredentials(env Env) (aws.CredentialsProvider, error) {
	key := firstSet(env, "AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY")
	secret := firstSet(env, "AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY")
	if key == "" || secret == "" {
		var others []string
		for _, name := range otherCredentialSources {
			if env(name) != "" {
				others = append(others, name)
			}
		}
		msg := "environment variables AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are required"
		if len(others) > 0 {
			msg += " (" + strings.Join(others, ", ") + " not read)"
		}
		return nil, fmt.Errorf("%s", msg)
	}
	return credentials.StaticCredentialsProvider{Value: aws.Credentials{
		AccessKeyID:     key,
		SecretAccessKey: secret,
		SessionToken:    env("AWS_SESSION_TOKEN"),
		AccountID:       env("AWS_ACCOUNT_ID"),
		Source:          credentials.StaticCredentialsName,
	}}, nil
}

// endpointSource gives each client the endpoint of its service from
// AWS_ENDPOINT_URL_<SERVICE>, the service's SDK ID in upper case with
// spaces as underscores, as the config package's environment source
// does; an empty value is no endpoint. The clients look for these
// methods in aws.Config.ConfigSources.
type endpointSource struct {
	env    Env
	ignore bool
}

func (s endpointSource) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	if s.ignore {
		return "", false, nil
	}
	v := s.env("AWS_ENDPOINT_URL_" + strings.ReplaceAll(strings.ToUpper(sdkID), " ", "_"))
	return v, v != "", nil
}

func (s endpointSource) GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error) {
	return s.ignore, true, nil
}

// firstSet is the value of the first of names that is set and not empty.
func firstSet(env Env, names ...string) string {
	for _, n := range names {
		if v := env(n); v != "" {
			return v
		}
	}
	return ""
}
