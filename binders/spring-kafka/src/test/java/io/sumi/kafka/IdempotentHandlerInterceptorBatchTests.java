package io.sumi.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.BatchResult;
import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.MessageKeyResolver;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.IntStream;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.springframework.aop.framework.ProxyFactory;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.MessageBuilder;

/**
 * A batch through the interceptor, without a broker or a ledger: an executor that reports some
 * records as duplicates, so the method sees a filtered batch. Every per-record argument is
 * filtered alike, and a failure index the method reports against the filtered list reaches Spring
 * Kafka as the index in the whole batch.
 */
class IdempotentHandlerInterceptorBatchTests {

    private final List<ConsumerRecord<String, String>> batch = IntStream.range(0, 5)
            .mapToObj(i -> new ConsumerRecord<>("orders", i % 2, 100 + i, "key-" + i, "value-" + i))
            .toList();

    /** An executor that runs the batch body with every index but the duplicates, and passes failures through. */
    static final class SkippingExecutor implements IdempotentExecutor {

        private final Set<Integer> duplicates;

        SkippingExecutor(Set<Integer> duplicates) {
            this.duplicates = duplicates;
        }

        @Override
        public <T> HandlerResult<T> execute(HandlerDefinition handler, InboundMessage message, HandlerBody<T> body) {
            throw new UnsupportedOperationException("a batch test");
        }

        @Override
        public BatchResult executeBatch(
                HandlerDefinition handler, List<? extends InboundMessage> messages, BatchBody body) throws Exception {
            List<Integer> indexes = IntStream.range(0, messages.size())
                    .filter(i -> !duplicates.contains(i))
                    .boxed()
                    .toList();
            body.run(indexes);
            return new BatchResult(indexes.size(), duplicates.size());
        }

        @Override
        public MessageKeyResolver keyResolver() {
            return new MessageKeyResolver();
        }
    }

    /** A batch listener that remembers its arguments and fails where it is told to. */
    static class Listener {

        final List<Object[]> calls = new ArrayList<>();
        RuntimeException failure;

        @IdempotentHandler
        public void onBatch(
                List<ConsumerRecord<String, String>> records,
                List<String> values,
                ConsumerRecords<String, String> polled,
                Message<List<String>> message,
                String notPerRecord) {
            calls.add(new Object[] {records, values, polled, message, notPerRecord});
            if (failure != null) {
                throw failure;
            }
        }
    }

    private Listener listener(Listener target, Set<Integer> duplicates) {
        ProxyFactory factory = new ProxyFactory(target);
        factory.setProxyTargetClass(true);
        factory.addAdvice(
                new IdempotentHandlerInterceptor(new SkippingExecutor(duplicates), HandlerDefaults.standard()));
        return (Listener) factory.getProxy();
    }

    private void deliver(Listener proxy) {
        List<String> values = batch.stream().map(ConsumerRecord::value).toList();
        List<String> keys = batch.stream().map(ConsumerRecord::key).toList();
        Message<List<String>> message = MessageBuilder.withPayload(values)
                .setHeader("kafka_receivedMessageKey", keys)
                .setHeader("single", "kept")
                .build();
        proxy.onBatch(batch, values, polled(batch), message, "not per record");
    }

    private static ConsumerRecords<String, String> polled(List<ConsumerRecord<String, String>> records) {
        Map<TopicPartition, List<ConsumerRecord<String, String>>> byPartition = new java.util.LinkedHashMap<>();
        records.forEach(r -> byPartition
                .computeIfAbsent(new TopicPartition(r.topic(), r.partition()), tp -> new ArrayList<>())
                .add(r));
        return new ConsumerRecords<>(byPartition, Map.of());
    }

    @Test
    @SuppressWarnings("unchecked")
    void everyPerRecordArgumentIsFilteredToTheRecordsStillToProcess() {
        Listener target = new Listener();
        deliver(listener(target, Set.of(1, 3)));

        assertThat(target.calls).hasSize(1);
        Object[] args = target.calls.get(0);
        assertThat((List<ConsumerRecord<String, String>>) args[0])
                .containsExactly(batch.get(0), batch.get(2), batch.get(4));
        assertThat((List<String>) args[1]).containsExactly("value-0", "value-2", "value-4");
        List<ConsumerRecord<String, String>> polled = new ArrayList<>();
        ((ConsumerRecords<String, String>) args[2]).forEach(polled::add);
        assertThat(polled).containsExactlyInAnyOrder(batch.get(0), batch.get(2), batch.get(4));
        Message<List<String>> message = (Message<List<String>>) args[3];
        assertThat(message.getPayload()).containsExactly("value-0", "value-2", "value-4");
        assertThat(message.getHeaders().get("kafka_receivedMessageKey")).isEqualTo(List.of("key-0", "key-2", "key-4"));
        assertThat(message.getHeaders().get("single")).isEqualTo("kept");
        assertThat(args[4]).isEqualTo("not per record");
    }

    @Test
    void withoutDuplicatesTheMethodGetsTheArgumentsAsTheyCame() {
        Listener target = new Listener();
        deliver(listener(target, Set.of()));

        assertThat(target.calls.get(0)[0]).isSameAs(batch);
    }

    @Test
    void aFailureIndexInTheFilteredListIsTranslatedToTheIndexInTheBatch() {
        Listener target = new Listener();
        // The method saw records 0, 2, 4: its index 1 is record 2 of the batch.
        target.failure = new BatchListenerFailedException("smtp down", new IllegalStateException("smtp down"), 1);

        assertThatThrownBy(() -> deliver(listener(target, Set.of(1, 3))))
                .isInstanceOfSatisfying(BatchListenerFailedException.class, ex -> {
                    assertThat(ex.getIndex()).isEqualTo(2);
                    assertThat(ex).hasMessageContaining("orders-0@102").hasRootCauseMessage("smtp down");
                });
    }

    @Test
    void aFailedRecordNamedByTheMethodIsFoundInTheBatch() {
        Listener target = new Listener();
        target.failure =
                new BatchListenerFailedException("smtp down", new IllegalStateException("smtp down"), batch.get(4));

        assertThatThrownBy(() -> deliver(listener(target, Set.of(1, 3))))
                .isInstanceOfSatisfying(
                        BatchListenerFailedException.class,
                        ex -> assertThat(ex.getIndex()).isEqualTo(4));
    }

    @Test
    void anIndexOutsideTheFilteredListIsPassedOnUnchanged() {
        Listener target = new Listener();
        BatchListenerFailedException failure =
                new BatchListenerFailedException("bad index", new IllegalStateException("x"), 7);
        target.failure = failure;

        assertThatThrownBy(() -> deliver(listener(target, Set.of(1, 3)))).isSameAs(failure);
    }
}
