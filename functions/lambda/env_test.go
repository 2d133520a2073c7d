package lambda_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/destination"
	fnlambda "github.com/sortie-run/sortie/functions/lambda"
)

func TestLoadEnv(t *testing.T) {
	env := map[string]string{
		fnlambda.EnvTable:           "runs",
		fnlambda.EnvKMSKeys:         "k1=arn:aws:kms:eu-west-1:1:key/a, k2=arn:aws:kms:eu-west-1:1:key/b",
		fnlambda.EnvConfigEnv:       "API_TOKEN, OTHER",
		destination.EnvAllow:        "*",
		fnlambda.EnvPayloadBucket:   "s3://payloads?region=eu-west-1",
		fnlambda.EnvMaxPayloadBytes: "1048576",
	}
	got, err := fnlambda.LoadEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("LoadEnv(%v) = %v, want nil", env, err)
	}
	want := &fnlambda.Env{Mode: fnlambda.ModeWorker, Table: "runs",
		Keys:      [][2]string{{"k1", "arn:aws:kms:eu-west-1:1:key/a"}, {"k2", "arn:aws:kms:eu-west-1:1:key/b"}},
		ConfigEnv: []string{"API_TOKEN", "OTHER"}, Destinations: destination.PublicHTTPS(),
		PayloadBucket: "s3://payloads?region=eu-west-1", MaxPayloadBytes: 1 << 20}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadEnv (-want +got):\n%s", diff)
	}
	bad := map[string]map[string]string{
		fnlambda.EnvTable:         {},
		fnlambda.EnvMode:          {fnlambda.EnvTable: "runs", fnlambda.EnvMode: "both"},
		fnlambda.EnvKMSKeys:       {fnlambda.EnvTable: "runs", fnlambda.EnvKMSKeys: "no-equals"},
		fnlambda.EnvLogLevel:      {fnlambda.EnvTable: "runs", fnlambda.EnvLogLevel: "loud"},
		destination.EnvAllowAddrs: {fnlambda.EnvTable: "runs", destination.EnvAllowAddrs: "10.0.0.1"},
		// A bucket without the keyring that seals its URLs; a limit out of range.
		fnlambda.EnvPayloadBucket:   {fnlambda.EnvTable: "runs", fnlambda.EnvPayloadBucket: "s3://payloads?region=eu-west-1"},
		fnlambda.EnvMaxPayloadBytes: {fnlambda.EnvTable: "runs", fnlambda.EnvMaxPayloadBytes: "1073741825"},
	}
	for field, env := range bad {
		_, err := fnlambda.LoadEnv(func(k string) string { return env[k] })
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("LoadEnv(%v) = %v, want a *sortie.ValidationError naming %s", env, err, field)
		}
	}
}

// ParseKMSKeys names the field it was given; an empty value is no keys.
func TestParseKMSKeys(t *testing.T) {
	got, err := fnlambda.ParseKMSKeys("--kms-keys", " ")
	if err != nil || got != nil {
		t.Errorf("ParseKMSKeys(blank) = %v, %v; want nil, nil", got, err)
	}
	for _, v := range []string{"=arn", "id=", "a=arn,,b=arn"} {
		_, err := fnlambda.ParseKMSKeys("--kms-keys", v)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != "--kms-keys" {
			t.Errorf("ParseKMSKeys(--kms-keys, %q) = %v, want a *sortie.ValidationError naming --kms-keys", v, err)
		}
	}
}
