package io.sumi.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.sumi.jdbc.DatabaseType;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

class OutboxDispatcherBuilderTests {

    private final OutboxTable table = OutboxTable.builder(new DriverManagerDataSource("jdbc:h2:mem:unused"))
            .databaseType(DatabaseType.H2)
            .build();

    private final OutboxPublisher publisher = records -> PublishResult.allSent();

    @Test
    void aSendTimeoutAboveHalfTheLeaseIsRefusedWithWhatToChange() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> OutboxDispatcher.builder(table, publisher)
                        .lease(Duration.ofSeconds(10))
                        .sendTimeout(Duration.ofSeconds(6))
                        .build())
                .withMessageContaining("send timeout (PT6S) must be at most half the lease (PT10S)")
                .withMessageContaining("sumi.outbox.dispatcher.lease")
                .withMessageContaining("sumi.outbox.dispatcher.send-timeout");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> OutboxDispatcher.builder(table, publisher)
                        .lease(Duration.ofSeconds(50))
                        .build())
                .withMessageContaining("PT30S");
    }

    @Test
    void aSendTimeoutOfHalfTheLeaseOrLessIsAccepted() {
        assertThat(OutboxDispatcher.builder(table, publisher)
                        .lease(Duration.ofSeconds(10))
                        .sendTimeout(Duration.ofSeconds(5))
                        .build())
                .isNotNull();
        assertThat(OutboxDispatcher.builder(table, publisher).build())
                .as("the defaults: 2 min lease, 30 s send timeout")
                .isNotNull();
        assertThat(OutboxDispatcher.DEFAULT_SEND_TIMEOUT.multipliedBy(2))
                .isLessThanOrEqualTo(OutboxDispatcher.DEFAULT_LEASE);
    }
}
