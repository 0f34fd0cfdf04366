package io.sumi.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.sumi.outbox.internal.HeadersJson;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class HeadersJsonTests {

    @Test
    void headersSurviveTheRoundTripInOrderWithAnyCharacters() {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("trace-id", "4bf92f3577b34da6a3ce929d0e0e4736");
        headers.put("quote\"and\\backslash", "line\nbreak\ttab \u0001 control");
        headers.put("unicode", "済み ✓");
        String json = HeadersJson.write(headers);
        assertThat(HeadersJson.read(json)).containsExactlyEntriesOf(headers);
        assertThat(HeadersJson.write(Map.of())).isEqualTo("{}");
        assertThat(HeadersJson.read("{}")).isEmpty();
    }

    @Test
    void handWrittenJsonWithNumbersBooleansAndNullsIsRead() {
        assertThat(HeadersJson.read(" { \"schema-version\" : 2, \"flag\": true, \"gone\": null, \"s\": \"\\u00e9\" } "))
                .containsExactly(Map.entry("schema-version", "2"), Map.entry("flag", "true"), Map.entry("s", "é"));
    }

    @Test
    void nestedValuesAndBrokenJsonAreRejectedClearly() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> HeadersJson.read("{\"a\": {\"b\": 1}}"))
                .withMessageContaining("not objects or arrays");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> HeadersJson.read("{\"a\": \"b\""))
                .withMessageContaining("Invalid outbox headers JSON");
        assertThatIllegalArgumentException().isThrownBy(() -> HeadersJson.read("[1]"));
        assertThatIllegalArgumentException().isThrownBy(() -> HeadersJson.read("{\"a\": \"b\"} x"));
    }
}
