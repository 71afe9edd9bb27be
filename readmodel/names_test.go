package readmodel_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permitd/permitd/readmodel"
)

func TestNormName(t *testing.T) {
	for in, want := range map[string]string{
		" Coeur d'Alene ": "coeur d alene",
		"KING  COUNTY":    "king county",
		"":                "",
		"---":             "",
		"SEDRO-WOOLLEY":   "sedro woolley",
		"Ñandú 2":         "ñandú 2",
		"St. John":        "st john",
		"Élan\tVital":     "élan vital",
	} {
		require.Equal(t, want, readmodel.NormName(in), "%q", in)
	}
}
