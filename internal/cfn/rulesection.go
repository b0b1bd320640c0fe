package cfn

import (
	"errors"
	"fmt"
)

// ErrRuleFailed reports parameter values that an assertion of the
// template's Rules section refuses: CloudFormation refuses them before it
// creates or changes anything.
var ErrRuleFailed = errors.New("cfn: a template rule refuses the parameters")

// CheckRules evaluates the template's Rules section for the resolver's
// parameters, as CloudFormation does when it makes a change set: each
// rule whose RuleCondition holds (or that has none) must see every one of
// its Assertions hold. A failed assertion is an error wrapping
// ErrRuleFailed with the rule's name and its AssertDescription. Rule
// functions beyond the condition functions (Fn::Equals, Fn::Not, Fn::And,
// Fn::Or) are refused by name.
func (r *Resolver) CheckRules() error {
	rules := r.t.Root.Get("Rules")
	if rules == nil {
		return nil
	}
	if rules.Kind != KindMapping {
		return r.errAt(rules, ErrInvalid, "Rules must be a mapping")
	}
	for _, name := range rules.Keys {
		rule := rules.Get(name)
		if c := rule.Get("RuleCondition"); c != nil {
			ok, err := r.cond(c)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
		}
		asserts := rule.Get("Assertions")
		if asserts == nil || asserts.Kind != KindSequence {
			return r.errAt(rule, ErrInvalid, "rule %s has no Assertions list", name)
		}
		for _, a := range asserts.Items {
			ok, err := r.cond(a.Get("Assert"))
			if err != nil {
				return err
			}
			if !ok {
				desc, _ := a.Get("AssertDescription").Str()
				return fmt.Errorf("%w: rule %s: %s", ErrRuleFailed, name, desc)
			}
		}
	}
	return nil
}
