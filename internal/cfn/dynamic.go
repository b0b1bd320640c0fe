package cfn

import (
	"crypto/rand"
	"regexp"
	"sync"
)

// TypeSecret is a Secrets Manager secret.
const TypeSecret = "AWS::SecretsManager::Secret"

// secretRef is CloudFormation's dynamic reference to a secret's value.
var secretRef = regexp.MustCompile(`\{\{resolve:secretsmanager:([^:{}]+):SecretString\}\}`)

// generatedSecrets are the values that stand in for the secrets the
// template generates (GenerateSecretString), by physical name: random,
// made once per process, so every function of a local stack reads the
// same value, as the functions of a deployed stack read the one value
// CloudFormation resolved.
var generatedSecrets sync.Map

// dynamicRefs resolves the dynamic references to secrets in s, as
// CloudFormation does when it deploys: only references to a secret of
// the template that generates its value (GenerateSecretString) are
// resolved locally; any other is unsupported.
func (r *Resolver) dynamicRefs(n *Node, s string) (string, error) {
	var err error
	out := secretRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := secretRef.FindStringSubmatch(ref)[1]
		for _, res := range r.t.Resources {
			if res.Type != TypeSecret || res.Properties.Get("GenerateSecretString") == nil {
				continue
			}
			if physical, perr := r.PhysicalName(res); perr == nil && physical == name {
				v, _ := generatedSecrets.LoadOrStore(name, rand.Text()+rand.Text())
				return v.(string)
			}
		}
		if err == nil {
			err = r.unsupported(n, "dynamic reference "+ref+" (only to a secret the template generates)")
		}
		return ref
	})
	return out, err
}
