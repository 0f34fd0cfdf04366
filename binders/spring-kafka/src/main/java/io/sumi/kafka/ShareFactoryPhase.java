package io.sumi.kafka;

import java.lang.reflect.Field;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.kafka.config.ShareKafkaListenerContainerFactory;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.util.ReflectionUtils;

/**
 * Gives a {@link ShareKafkaListenerContainerFactory} whose phase the application did not set the
 * phase every other listener container has ({@link AbstractMessageListenerContainer#DEFAULT_PHASE}).
 * Spring Kafka 4.1's share factory defaults to phase 0 and hands it to its containers, and the
 * listener containers' registry then takes that phase for <em>all</em> its containers, ordinary ones
 * included: they would start before Sumi configures their error handlers (which it does in the
 * phases just before the default), and an ordinary {@code @IdempotentHandler} listener would run
 * with an error handler Sumi never taught. This happens on both Boot lines (Spring Kafka 4.0 has the
 * share factory too) and whether or not {@code sumi-binder-spring-kafka-share} is there, so the
 * starter registers it with the Kafka binder. A phase of the application's own (not 0) is left
 * alone.
 *
 * @since 0.1.0
 */
public final class ShareFactoryPhase implements BeanPostProcessor {

    private static final Logger log = LoggerFactory.getLogger(ShareFactoryPhase.class);

    private static final @Nullable Field PHASE =
            ReflectionUtils.findField(ShareKafkaListenerContainerFactory.class, "phase");

    @Override
    public Object postProcessBeforeInitialization(Object bean, String beanName) {
        if (bean instanceof ShareKafkaListenerContainerFactory<?, ?> factory && PHASE != null) {
            ReflectionUtils.makeAccessible(PHASE);
            if (ReflectionUtils.getField(PHASE, factory) instanceof Integer phase && phase == 0) {
                factory.setPhase(AbstractMessageListenerContainer.DEFAULT_PHASE);
                log.debug("Share container factory '{}': phase set to the listener containers' default", beanName);
            }
        }
        return bean;
    }
}
