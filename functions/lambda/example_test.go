package lambda_test

import (
	"fmt"

	fnlambda "github.com/sortie-run/sortie/functions/lambda"
)

// The function's configuration comes from its environment; cmd/sortie-lambda
// reads it with os.Getenv, builds the handler with package host/awshost's
// Function and starts it with aws-lambda-go.
func ExampleLoadEnv() {
	env := map[string]string{
		fnlambda.EnvTable:     "sortie-runs",
		fnlambda.EnvKMSKeys:   "kms-2026=arn:aws:kms:eu-west-1:111122223333:key/0b0e5a2c-5a6f-4c8e-9d31-6a1f2b3c4d5e",
		fnlambda.EnvConfigEnv: "API_TOKEN",
	}
	e, err := fnlambda.LoadEnv(func(k string) string { return env[k] })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.Mode, e.Table, e.Keys[0][0], e.ConfigEnv)
	// Output: worker sortie-runs kms-2026 [API_TOKEN]
}

// A host outside Lambda reads the keyring in the same format, from its own
// flag, and hands it to package host/awshost.
func ExampleParseKMSKeys() {
	keys, err := fnlambda.ParseKMSKeys("--kms-keys", "k2=arn:aws:kms:eu-west-1:111122223333:alias/new, k1=arn:aws:kms:eu-west-1:111122223333:alias/old")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(keys[0][0], "primary,", len(keys), "keys")
	_, err = fnlambda.ParseKMSKeys("--kms-keys", "no-equals")
	fmt.Println(err)
	// Output:
	// k2 primary, 2 keys
	// invalid --kms-keys: "no-equals" is not ID=KEY
}
