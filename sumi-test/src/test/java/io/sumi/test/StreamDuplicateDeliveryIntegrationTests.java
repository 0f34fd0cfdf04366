package io.sumi.test;

import static io.sumi.test.SumiAssertions.assertThatSumi;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.testing.TestDatabase;
import java.util.UUID;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.cloud.stream.binder.test.TestChannelBinderConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.messaging.Message;

/**
 * Duplicate delivery through Spring Cloud Stream's test binder: the same consumer function with
 * {@code @IdempotentHandler} ({@code idempotentMail}) and without ({@code plainMail}, the negative
 * control).
 */
@SpringBootTest(
        classes = StreamDuplicateDeliveryIntegrationTests.StreamApp.class,
        properties = {
            "spring.cloud.function.definition=idempotentMail;plainMail",
            "sumi.outbox.enabled=false",
            "spring.kafka.listener.auto-startup=false"
        })
@Import(TestChannelBinderConfiguration.class)
class StreamDuplicateDeliveryIntegrationTests {

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class StreamApp {

        @Bean(destroyMethod = "")
        DataSource dataSource() {
            return TestDatabase.POSTGRESQL.dataSource();
        }

        @Bean
        KitTestApplication.Mailbox mailbox() {
            return new KitTestApplication.Mailbox();
        }

        @Bean
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        Consumer<Message<String>> idempotentMail(KitTestApplication.Mailbox mailbox) {
            return message ->
                    mailbox.send("idempotentMail", IdempotencyContext.current().key(), message.getPayload());
        }

        @Bean
        Consumer<Message<String>> plainMail(KitTestApplication.Mailbox mailbox) {
            return message -> mailbox.send(
                    "plainMail", String.valueOf(message.getHeaders().get("idempotency-key")), message.getPayload());
        }
    }

    @Autowired
    SumiTest sumi;

    @Autowired
    KitTestApplication.Mailbox mailbox;

    @Test
    void copiesToAnIdempotentFunctionAreProcessedOnce() {
        String key = "stream-" + UUID.randomUUID();

        sumi.stream().send("idempotentMail-in-0", key, "hello").times(3).andAwait();

        assertThat(mailbox.sent("idempotentMail", key)).isEqualTo(1);
        assertThatSumi()
                .consumer("idempotentMail")
                .isGuardedBySumi()
                .processedOnce(key)
                .hasOutcome(key, DeliveryOutcome.DUPLICATE, 2)
                .hasNoClaimInProgress()
                .hasNothingDeadLettered();
    }

    @Test
    void concurrentCopiesToAnIdempotentFunctionAreProcessedOnce() {
        String key = "stream-" + UUID.randomUUID();

        sumi.stream()
                .send("idempotentMail-in-0", key, "hello")
                .times(3)
                .concurrently()
                .andAwait();

        assertThat(mailbox.sent("idempotentMail", key)).isEqualTo(1);
        assertThatSumi().consumer("idempotentMail").processedOnce(key).hasNoClaimInProgress();
    }

    @Test
    void theAssertionsFailForTheSameFunctionWithoutSumi() {
        String key = "stream-" + UUID.randomUUID();

        sumi.stream().send("plainMail-in-0", key, "hello").times(3).andAwait();

        assertThat(mailbox.sent("plainMail", key)).isEqualTo(3);
        ConsumerAssert plain = assertThatSumi().consumer("plainMail");
        assertThatThrownBy(() -> plain.processedOnce(key))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("ran 3 times");
        assertThatThrownBy(() -> plain.hasOutcome(DeliveryOutcome.DUPLICATE, 2)).isInstanceOf(AssertionError.class);
        assertThatThrownBy(plain::hasNoClaimInProgress).isInstanceOf(AssertionError.class);
        plain.ranHandler(key, 3);
    }
}
