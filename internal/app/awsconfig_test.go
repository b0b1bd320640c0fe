package app

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// lambdaEnv is the part of the environment Lambda gives every function
// that loadConfig reads, plus extra.
func lambdaEnv(extra map[string]string) Env {
	m := map[string]string{
		"AWS_REGION":            "eu-west-1",
		"AWS_DEFAULT_REGION":    "eu-west-1",
		"AWS_ACCESS_KEY_ID":     "ASIAEXAMPLE",
		"AWS_SECRET_ACCESS_KEY": "secret",
		"AWS_SESSION_TOKEN":     "token",
	}
	for k, v := range extra {
		if v == "-" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return func(k string) string { return m[k] }
}

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name    string
		extra   map[string]string // "-" removes a variable
		wantErr string
		check   func(t *testing.T, cfg aws.Config)
	}{
		{name: "Lambda's environment", check: func(t *testing.T, cfg aws.Config) {
			creds, err := cfg.Credentials.Retrieve(context.Background())
			if err != nil || creds.AccessKeyID != "ASIAEXAMPLE" || creds.SecretAccessKey != "secret" || creds.SessionToken != "token" {
				t.Errorf("credentials %+v, %v: want the environment's", creds, err)
			}
			if cfg.Region != "eu-west-1" || cfg.BaseEndpoint != nil || cfg.RetryMaxAttempts != 0 || cfg.RetryMode != "" {
				t.Errorf("region %s, endpoint %v, retries %d %q: want eu-west-1 and the SDK's defaults", cfg.Region, cfg.BaseEndpoint, cfg.RetryMaxAttempts, cfg.RetryMode)
			}
		}},
		{name: "AWS_DEFAULT_REGION alone", extra: map[string]string{"AWS_REGION": "-", "AWS_DEFAULT_REGION": "us-west-2"}, check: func(t *testing.T, cfg aws.Config) {
			if cfg.Region != "us-west-2" {
				t.Errorf("region %s, want us-west-2", cfg.Region)
			}
		}},
		{name: "no region", extra: map[string]string{"AWS_REGION": "-", "AWS_DEFAULT_REGION": "-"}, wantErr: "AWS_REGION is required"},
		{name: "no credentials", extra: map[string]string{"AWS_SECRET_ACCESS_KEY": "-"}, wantErr: "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are required"},
		{name: "container credentials instead", extra: map[string]string{"AWS_ACCESS_KEY_ID": "-", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://169.254.170.2/creds"},
			wantErr: "AWS_CONTAINER_CREDENTIALS_FULL_URI not read"},
		{name: "a profile", extra: map[string]string{"AWS_PROFILE": "dev"}, wantErr: "AWS_PROFILE is set, but the functions do not read it"},
		{name: "FIPS endpoints", extra: map[string]string{"AWS_USE_FIPS_ENDPOINT": "true"}, wantErr: "AWS_USE_FIPS_ENDPOINT"},
		{name: "retries", extra: map[string]string{"AWS_MAX_ATTEMPTS": "5", "AWS_RETRY_MODE": "adaptive", "AWS_SDK_UA_APP_ID": "transfers"}, check: func(t *testing.T, cfg aws.Config) {
			if cfg.RetryMaxAttempts != 5 || cfg.RetryMode != aws.RetryModeAdaptive || cfg.AppID != "transfers" {
				t.Errorf("retries %d %q, app %q: want 5 adaptive transfers", cfg.RetryMaxAttempts, cfg.RetryMode, cfg.AppID)
			}
		}},
		{name: "no attempts", extra: map[string]string{"AWS_MAX_ATTEMPTS": "0"}, wantErr: "AWS_MAX_ATTEMPTS must be a positive integer"},
		{name: "unknown retry mode", extra: map[string]string{"AWS_RETRY_MODE": "eager"}, wantErr: "AWS_RETRY_MODE"},
		{name: "one endpoint for every service", extra: map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:4566"}, check: func(t *testing.T, cfg aws.Config) {
			if aws.ToString(cfg.BaseEndpoint) != "http://127.0.0.1:4566" {
				t.Errorf("endpoint %v, want http://127.0.0.1:4566", cfg.BaseEndpoint)
			}
		}},
		{name: "configured endpoints ignored", extra: map[string]string{
			"AWS_ENDPOINT_URL": "http://127.0.0.1:4566", "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true",
		}, check: func(t *testing.T, cfg aws.Config) {
			src := cfg.ConfigSources[0].(endpointSource)
			if _, found, _ := src.GetServiceBaseEndpoint(context.Background(), "DynamoDB"); found || cfg.BaseEndpoint != nil {
				t.Errorf("endpoints used although ignored")
			}
		}},
		{name: "unreadable CA bundle", extra: map[string]string{"AWS_CA_BUNDLE": "/nonexistent/ca.pem"}, wantErr: "AWS_CA_BUNDLE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadConfig(lambdaEnv(tt.extra))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, cfg)
		})
	}
}

// With AWS_CA_BUNDLE, the clients trust the bundle's authorities: a call
// to a server whose certificate they sign succeeds, and fails without the
// bundle.
func TestLoadConfigTrustsTheCABundle(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{"TableNames":[]}`))
	}))
	defer srv.Close()
	// The client reads AWS_ENDPOINT_URL from the process itself: with it
	// set and no AWS_ENDPOINT_URL_DYNAMODB, the endpoint source is not asked.
	t.Setenv("AWS_ENDPOINT_URL", "") // restored after the test
	os.Unsetenv("AWS_ENDPOINT_URL")
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		bundle   string
		wantFail bool
	}{
		{name: "with the bundle", bundle: bundle},
		{name: "without it", wantFail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			extra := map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": srv.URL, "AWS_MAX_ATTEMPTS": "1"}
			if tt.bundle != "" {
				extra["AWS_CA_BUNDLE"] = tt.bundle
			}
			cfg, err := loadConfig(lambdaEnv(extra))
			if err != nil {
				t.Fatal(err)
			}
			_, err = dynamodb.NewFromConfig(cfg).ListTables(context.Background(), &dynamodb.ListTablesInput{})
			if (err != nil) != tt.wantFail {
				t.Errorf("ListTables: %v, want failure %v", err, tt.wantFail)
			}
		})
	}
}
