package io.sumi.jms;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** Which JMS property names a header name is read from, in which order. */
class JmsPropertyNamesTests {

    @Test
    void aDashedHeaderIsReadAsItselfThenItsJmsValidNameThenCamelsSpelling() {
        assertThat(JmsPropertyNames.candidates("outbox-id"))
                .containsExactly("outbox-id", "outbox_id", "outbox_HYPHEN_id");
        assertThat(JmsPropertyNames.candidates("tenant")).containsExactly("tenant");
        assertThat(JmsPropertyNames.lookup("outbox-id", Map.of("outbox_id", "a", "outbox_HYPHEN_id", "b")::get))
                .isEqualTo("a");
        assertThat(JmsPropertyNames.lookup("outbox-id", Map.of("outbox-id", "x", "outbox_id", "a")::get))
                .isEqualTo("x");
        assertThat(JmsPropertyNames.lookup("idempotency-key", Map.<String, Object>of()::get))
                .isNull();
        assertThat(JmsPropertyNames.jmsName("idempotency-key")).isEqualTo("idempotency_key");
    }
}
