package asl

import (
	"testing"
)

// storeDoc is the JSONPath reference example ("store"), which the Jayway
// JsonPath documentation uses; the developer guide's "Paths" page
// (https://docs.aws.amazon.com/step-functions/latest/dg/amazon-states-language-paths.html)
// points to that syntax for Paths, and restricts reference paths
// (ResultPath, ...) to plain ones.
const storeDoc = `{"store":{
  "book":[
    {"category":"reference","author":"Nigel Rees","title":"Sayings of the Century","price":8.95},
    {"category":"fiction","author":"Evelyn Waugh","title":"Sword of Honour","price":12.99},
    {"category":"fiction","author":"Herman Melville","title":"Moby Dick","isbn":"0-553-21311-3","price":8.99},
    {"category":"fiction","author":"J. R. R. Tolkien","title":"The Lord of the Rings","isbn":"0-395-19395-8","price":22.99}],
  "bicycle":{"color":"red","price":19.95}},
  "expensive":10}`

// TestQueryPaths checks Paths with JSONPath operators in InputPath,
// Parameters and intrinsic arguments: results of indefinite paths are
// arrays in document order, empty when nothing matches; numbers keep
// their exact text.
func TestQueryPaths(t *testing.T) {
	tests := []struct {
		path string
		want string
	}{
		{"$.store.book[*].author", `["Nigel Rees","Evelyn Waugh","Herman Melville","J. R. R. Tolkien"]`},
		{"$..author", `["Nigel Rees","Evelyn Waugh","Herman Melville","J. R. R. Tolkien"]`},
		{"$.store.book[2]", `{"category":"fiction","author":"Herman Melville","title":"Moby Dick","isbn":"0-553-21311-3","price":8.99}`},
		{"$.store.book[-1].title", `"The Lord of the Rings"`},
		{"$.store.book[0,1].title", `["Sayings of the Century","Sword of Honour"]`},
		{"$.store.book[:2].price", `[8.95,12.99]`},
		{"$.store.book[2:].price", `[8.99,22.99]`},
		{"$.store.book[-2:].price", `[8.99,22.99]`},
		{"$.store.book[?(@.isbn)].title", `["Moby Dick","The Lord of the Rings"]`},
		{"$.store.book[?(@.price < 10)].title", `["Sayings of the Century","Moby Dick"]`},
		{"$.store.book[?(@.category == 'fiction' && @.price < 20)].title", `["Sword of Honour","Moby Dick"]`},
		{"$.store.book[?(@.price > 20 || @.author == 'Nigel Rees')].title", `["Sayings of the Century","The Lord of the Rings"]`},
		{"$.store.book[?(@.price == 99)]", `[]`},
		{"$.store.bicycle.*", `["red",19.95]`},
		{"$..bicycle.price", `[19.95]`},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			for _, def := range []string{
				passDef(`"InputPath":"` + tc.path + `"`),
				passDef(`"Parameters":{"v.$":"` + tc.path + `"},"OutputPath":"$.v"`),
				passDef(`"Parameters":{"v.$":"States.Array(` + tc.path + `)"},"OutputPath":"$.v[0]"`),
			} {
				wantSucceeded(t, runDef(t, def, nil, storeDoc), tc.want)
			}
		})
	}
}

// TestQueryChoiceVariable: a Choice rule's Variable is a Path, so it may
// use a filter; its comparisons' ...Path operands stay reference paths.
func TestQueryChoiceVariable(t *testing.T) {
	def := `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[
	  {"Variable":"$.items[?(@.status == 0)].id","IsPresent":true,"Next":"Yes"}],"Default":"No"},
	  "Yes":{"Type":"Pass","Parameters":{"ids.$":"$.items[?(@.status == 0)].id"},"End":true},"No":{"Type":"Pass","Result":"no","End":true}}}`
	wantSucceeded(t, runDef(t, def, nil, `{"items":[{"id":"a","status":0},{"id":"b","status":1},{"id":"c","status":0}]}`), `{"ids":["a","c"]}`)
}

// TestQueryExactNumbers: a filter compares numbers by value, and the
// values selected keep their exact text.
func TestQueryExactNumbers(t *testing.T) {
	def := passDef(`"InputPath":"$.amounts[?(@ > 1)]"`)
	wantSucceeded(t, runDef(t, def, nil, `{"amounts":[1, 12345678901234567890.10, 2.50]}`), `[12345678901234567890.10,2.50]`)
	r := runDef(t, def, nil, `{"amounts":[1, 12345678901234567890.10, 2.50]}`)
	if got := string(r.Output); got != `[12345678901234567890.10,2.50]` {
		t.Fatalf("output %s, want the numbers' exact text", got)
	}
}
