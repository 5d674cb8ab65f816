module github.com/admit-go/admit

go 1.25
