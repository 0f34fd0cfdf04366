package io.sumi.kafka;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.IdempotentHandler;
import java.lang.reflect.Method;
import java.time.Clock;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.kafka.listener.KafkaMessageListenerContainer;
import org.springframework.kafka.listener.MessageListener;
import org.springframework.kafka.listener.adapter.HandlerAdapter;
import org.springframework.kafka.listener.adapter.KafkaBackoffAwareMessageListenerAdapter;
import org.springframework.kafka.listener.adapter.RecordMessagingMessageListenerAdapter;
import org.springframework.messaging.handler.invocation.InvocableHandlerMethod;

/**
 * {@link AsyncListenerCheck} on asynchronous record listeners: refused by default, even on a
 * retry-topic container (Spring Kafka commits a failed future's offset before its retry is
 * published); with {@code allowAsyncListeners}, refused only without retry topics.
 */
class AsyncListenerCheckTests {

    @Test
    void aGuardedAsyncRecordListenerOnARetryTopicContainerIsRefusedWithoutTheOptIn() {
        assertThatThrownBy(() -> AsyncListenerCheck.check(container("guarded-retry", "guarded", true), false))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'guarded-retry'")
                .hasMessageContaining("before its retry is published")
                .hasMessageContaining("Return void or a value")
                .hasMessageContaining("sumi.kafka.allow-async-listeners=true");
    }

    @Test
    void aGuardedAsyncRecordListenerWithoutRetryTopicsIsRefusedWithoutTheOptIn() {
        assertThatThrownBy(() -> AsyncListenerCheck.check(container("guarded-plain", "guarded", false), false))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("before its retry is published");
    }

    @Test
    void withTheOptInAGuardedAsyncRecordListenerStartsOnARetryTopicContainer() {
        assertThatCode(() -> AsyncListenerCheck.check(container("guarded-retry", "guarded", true), true))
                .doesNotThrowAnyException();
    }

    @Test
    void withTheOptInAGuardedAsyncRecordListenerWithoutRetryTopicsIsStillRefused() {
        assertThatThrownBy(() -> AsyncListenerCheck.check(container("guarded-plain", "guarded", false), true))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'guarded-plain'")
                .hasMessageContaining("not a retry-topic container");
    }

    @Test
    void anAsyncRecordListenerWithoutIdempotentHandlerIsLeftAlone() {
        assertThatCode(() -> AsyncListenerCheck.check(container("plain", "plain", false), false))
                .doesNotThrowAnyException();
    }

    /** A container running {@link Listeners}' {@code method} as {@code @KafkaListener} would, behind retry topics if asked. */
    private static KafkaMessageListenerContainer<String, String> container(String id, String method, boolean retryTopic)
            throws NoSuchMethodException {
        Listeners bean = new Listeners();
        Method handler = Listeners.class.getMethod(method, ConsumerRecord.class);
        RecordMessagingMessageListenerAdapter<String, String> adapter =
                new RecordMessagingMessageListenerAdapter<>(bean, handler);
        adapter.setHandlerMethod(new HandlerAdapter(new InvocableHandlerMethod(bean, handler)));
        MessageListener<String, String> listener = retryTopic
                ? new KafkaBackoffAwareMessageListenerAdapter<>(
                        adapter, context -> {}, id, "retry_topic-backoff-timestamp", Clock.systemUTC())
                : adapter;
        return SumiKafkaErrorHandlingTests.container(id, listener);
    }

    public static class Listeners {

        @IdempotentHandler
        public CompletableFuture<Void> guarded(ConsumerRecord<String, String> record) {
            return CompletableFuture.completedFuture(null);
        }

        public CompletableFuture<Void> plain(ConsumerRecord<String, String> record) {
            return CompletableFuture.completedFuture(null);
        }
    }
}
