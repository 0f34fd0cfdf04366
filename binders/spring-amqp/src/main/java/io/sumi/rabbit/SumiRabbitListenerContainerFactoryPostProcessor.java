package io.sumi.rabbit;

import io.sumi.consumer.binder.BusyPolicy;
import io.sumi.consumer.binder.ListenerPauser;
import io.sumi.rabbit.internal.BatchRecoveryCheck;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.rabbit.config.AbstractRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.config.ContainerCustomizer;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.util.ReflectionUtils;

/**
 * Puts {@link SumiRabbitContainerAdvice} on every container that the Spring AMQP listener
 * container factories of the context create (the simple and the direct container alike): a
 * container customizer that runs after the application's own customizer (which stays in place)
 * and sets the advice chain to Sumi's outer advice, the factory's advices, Sumi's inner advice.
 *
 * <p>It refuses (an {@link IllegalStateException} as the container is created, so start-up fails) a
 * consumer-batch container whose factory retries with a stateless retry interceptor whose recoverer
 * is not a {@link org.springframework.amqp.rabbit.retry.MessageBatchRecoverer}: Spring AMQP would
 * acknowledge a batch whose retries are spent, and its messages would never reach the dead-letter
 * exchange (see {@link RejectAndDontRequeueBatchRecoverer}).
 */
public final class SumiRabbitListenerContainerFactoryPostProcessor implements BeanPostProcessor {

    /** {@code AbstractRabbitListenerContainerFactory.containerCustomizer}: it has a setter only. */
    private static final @Nullable Field CUSTOMIZER =
            ReflectionUtils.findField(AbstractRabbitListenerContainerFactory.class, "containerCustomizer");

    private final Supplier<BusyPolicy> busyPolicy;
    private final Supplier<@Nullable ListenerPauser<AbstractMessageListenerContainer>> budgetStopper;

    /**
     * @param busyInterval the wait between two runs of a held busy key (looked up when a container
     *     is created); the least hold is {@link BusyPolicy#DEFAULT_MAX_WAIT}
     * @param budgetStopper the stopper for spent budgets, or a supplier of {@code null} for none
     */
    public SumiRabbitListenerContainerFactoryPostProcessor(
            Supplier<Duration> busyInterval,
            Supplier<@Nullable ListenerPauser<AbstractMessageListenerContainer>> budgetStopper) {
        this(budgetStopper, (PolicyLookup) () -> SumiRabbitContainerAdvice.policy(busyInterval.get()));
    }

    /**
     * A post processor whose containers hold busy keys under {@code busyPolicy}.
     *
     * @param busyPolicy how busy keys are held in place (looked up when a container is created)
     * @param budgetStopper the stopper for spent budgets, or a supplier of {@code null} for none
     * @since 0.1.0
     */
    public static SumiRabbitListenerContainerFactoryPostProcessor withBusyPolicy(
            Supplier<BusyPolicy> busyPolicy,
            Supplier<@Nullable ListenerPauser<AbstractMessageListenerContainer>> budgetStopper) {
        return new SumiRabbitListenerContainerFactoryPostProcessor(budgetStopper, busyPolicy::get);
    }

    /** The policy's lookup, a type of its own so this constructor does not clash with the public one. */
    private interface PolicyLookup {
        BusyPolicy get();
    }

    private SumiRabbitListenerContainerFactoryPostProcessor(
            Supplier<@Nullable ListenerPauser<AbstractMessageListenerContainer>> budgetStopper,
            PolicyLookup busyPolicy) {
        Objects.requireNonNull(busyPolicy, "busyPolicy");
        this.busyPolicy = busyPolicy::get;
        this.budgetStopper = Objects.requireNonNull(budgetStopper, "budgetStopper");
    }

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"}) // the factory's container type is not known here
    public Object postProcessAfterInitialization(Object bean, String beanName) {
        if (bean instanceof AbstractRabbitListenerContainerFactory factory) {
            ContainerCustomizer<?> existing = existingCustomizer(factory);
            if (SpringAmqpLines.isSumiCustomizer(existing)) {
                return bean;
            }
            AbstractRabbitListenerContainerFactory<?> typed = factory;
            factory.setContainerCustomizer((ContainerCustomizer)
                    SpringAmqpLines.customizer(existing, container -> configure(typed, beanName, container)));
        }
        return bean;
    }

    private static @Nullable ContainerCustomizer<?> existingCustomizer(
            AbstractRabbitListenerContainerFactory<?> factory) {
        if (CUSTOMIZER == null) {
            throw new IllegalStateException("Sumi cannot read the container customizer of "
                    + factory.getClass().getName()
                    + " (a Spring AMQP version Sumi does not know): it would replace the application's customizer");
        }
        ReflectionUtils.makeAccessible(CUSTOMIZER);
        return (ContainerCustomizer<?>) ReflectionUtils.getField(CUSTOMIZER, factory);
    }

    /**
     * Sumi's part of the customizer (after the application's own, see {@link SpringAmqpLines#customizer}):
     * installs Sumi's advices.
     */
    private void configure(
            AbstractRabbitListenerContainerFactory<?> factory,
            String factoryName,
            AbstractMessageListenerContainer container) {
        // A consumer batch whose retries are spent must not be acknowledged by a recoverer that
        // cannot recover a batch: refused here, as the container is created (start-up fails).
        BatchRecoveryCheck.check(container, factory.getAdviceChain(), factoryName);
        container.setAdviceChain(SumiRabbitContainerAdvice.wrap(
                container, factory.getAdviceChain(), busyPolicy.get(), budgetStopper.get()));
    }
}
