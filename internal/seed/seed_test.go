package seed

import "testing"

func TestParse(t *testing.T) {
	const alice = "iam:arn:aws:iam::123456789012:user/alice"
	tests := []struct {
		name, spec, owner string
		want              Account
		wantErr           bool
	}{
		{name: "owner of all accounts", spec: "a-1:EUR:100", owner: alice,
			want: Account{ID: "a-1", Owner: alice, Currency: "EUR", Balance: 100}},
		{name: "owner in the spec, with colons", spec: "a-1:USD:5:" + alice, owner: "iam:other",
			want: Account{ID: "a-1", Owner: alice, Currency: "USD", Balance: 5}},
		{name: "no owner", spec: "a-1:EUR:100", wantErr: true},
		{name: "empty owner in the spec", spec: "a-1:EUR:100:", wantErr: true},
		{name: "too few parts", spec: "a-1:EUR", owner: alice, wantErr: true},
		{name: "negative balance", spec: "a-1:EUR:-1", owner: alice, wantErr: true},
		{name: "lower-case currency", spec: "a-1:eur:1", owner: alice, wantErr: true},
		{name: "empty id", spec: ":EUR:1", owner: alice, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.spec, tt.owner)
			if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
				t.Fatalf("Parse(%q, %q) = %+v, %v; want %+v (error %v)", tt.spec, tt.owner, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestDemoAccountsBelongToTheLocalCaller(t *testing.T) {
	for _, a := range Demo {
		if a.Owner != LocalOwner {
			t.Errorf("demo account %s belongs to %q, want %q", a.ID, a.Owner, LocalOwner)
		}
	}
}
