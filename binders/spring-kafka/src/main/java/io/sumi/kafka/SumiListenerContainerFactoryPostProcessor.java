package io.sumi.kafka;

import io.sumi.kafka.internal.PollClaimingConsumer;
import io.sumi.kafka.internal.RecordCapturingInterceptor;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.kafka.config.AbstractKafkaListenerContainerFactory;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.listener.BatchInterceptor;
import org.springframework.kafka.listener.CompositeBatchInterceptor;
import org.springframework.kafka.listener.CompositeRecordInterceptor;
import org.springframework.kafka.listener.RecordInterceptor;

/**
 * Adds Sumi's record and batch interceptor to every Kafka listener container factory in the
 * context, after any interceptor the application set (which stays in place): it captures the
 * record being delivered so an {@code @IdempotentHandler} method that takes only a payload can
 * still read the record's key headers.
 */
public final class SumiListenerContainerFactoryPostProcessor implements BeanPostProcessor {

    private final RecordCapturingInterceptor capturing = new RecordCapturingInterceptor();
    private final boolean pollClaim;

    public SumiListenerContainerFactoryPostProcessor() {
        this(false);
    }

    /**
     * @param pollClaim whether record listeners claim each poll's keys in one round trip
     *     ({@code sumi.kafka.poll-claim}): the factories' consumer factories then wrap their
     *     consumers so that Sumi sees each poll and writes the kept completions before every
     *     offset commit (docs/kafka-poll-claim.md)
     */
    public SumiListenerContainerFactoryPostProcessor(boolean pollClaim) {
        this.pollClaim = pollClaim;
    }

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    public Object postProcessAfterInitialization(Object bean, String beanName) {
        if (bean instanceof AbstractKafkaListenerContainerFactory factory) {
            RecordInterceptor existingRecord = factory.getRecordInterceptor();
            if (!(existingRecord instanceof RecordCapturingInterceptor)) {
                factory.setRecordInterceptor(
                        existingRecord == null ? capturing : new CompositeRecordInterceptor(existingRecord, capturing));
            }
            BatchInterceptor existingBatch = factory.getBatchInterceptor();
            if (!(existingBatch instanceof RecordCapturingInterceptor)) {
                factory.setBatchInterceptor(
                        existingBatch == null ? capturing : new CompositeBatchInterceptor(existingBatch, capturing));
            }
            if (pollClaim) {
                ConsumerFactory consumers = factory.getConsumerFactory();
                if (consumers != null
                        && consumers.getPostProcessors().stream()
                                .noneMatch(PollClaimingConsumer.PostProcessor.class::isInstance)) {
                    consumers.addPostProcessor(new PollClaimingConsumer.PostProcessor<>());
                }
            }
        }
        return bean;
    }
}
