package io.sumi.rabbit;

import com.rabbitmq.client.Channel;
import io.sumi.consumer.budget.BudgetExhaustedException;
import io.sumi.consumer.exception.BatchFailedException;
import io.sumi.consumer.exception.Verdict;
import io.sumi.rabbit.internal.CurrentDelivery;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.aopalliance.aop.Advice;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.amqp.AmqpRejectAndDontRequeueException;
import org.springframework.amqp.ImmediateRequeueAmqpException;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;

/**
 * The two advices Sumi puts around a listener container's {@code invokeListener}, outside and
 * inside the application's own advice chain ({@link #wrap}):
 * <ul>
 *   <li>the <em>outer</em> advice records the message or consumer batch being delivered (so a
 *   listener method with any parameter style finds its key) and turns Sumi's verdict into what
 *   RabbitMQ understands;</li>
 *   <li>the <em>inner</em> advice takes Sumi's own exceptions away from the application's advices,
 *   so that a retry interceptor (Boot's {@code spring.rabbitmq.listener.*.retry}, a
 *   {@code RetryInterceptorBuilder}) never retries or "recovers" (dead-letters) them. Exceptions of
 *   the handler pass through untouched: the application's retry and recoverer, or the container's
 *   {@code defaultRequeueRejected}, decide about them; the handler's claim has been released.</li>
 * </ul>
 *
 * <p>Verdicts (AUTO and MANUAL acknowledgement alike; the exceptions carry
 * {@code rejectManual=true} so the container settles the delivery in MANUAL mode too):
 * <ul>
 *   <li>no key, an invalid key, a rejected fingerprint, a reply too large to keep: rejected without requeue, so the queue's
 *   dead-letter exchange gets it (RabbitMQ adds {@code x-death} with reason {@code rejected}; Sumi
 *   logs why at WARN). In a consumer batch only that message is rejected; the messages before it
 *   are done and the batch is requeued (the done ones are skipped as duplicates on redelivery).</li>
 *   <li>a busy key (another consumer holds a live lease) or a message awaiting reconciliation: the
 *   consumer thread waits {@code busyInterval}, then the delivery is requeued. The wait is what
 *   keeps it from a hot requeue loop: RabbitMQ puts a requeued message back at the head of its
 *   queue, so the same consumer would get it again at once.</li>
 *   <li>a spent budget: the container is stopped (on another thread) by the
 *   {@link RabbitBudgetListenerStopper} and the delivery requeued; the stopper starts the container
 *   again when the budget's breaker half-opens.</li>
 * </ul>
 * Thread-safe; one instance per container.
 */
public final class SumiRabbitContainerAdvice {

    /** The default wait before a busy key is requeued: 1 second. */
    public static final Duration DEFAULT_BUSY_INTERVAL = Duration.ofSeconds(1);

    private static final Logger log = LoggerFactory.getLogger(SumiRabbitContainerAdvice.class);

    private final AbstractMessageListenerContainer container;
    private final Duration busyInterval;
    private final @Nullable RabbitBudgetListenerStopper budgetStopper;

    public SumiRabbitContainerAdvice(
            AbstractMessageListenerContainer container,
            Duration busyInterval,
            @Nullable RabbitBudgetListenerStopper budgetStopper) {
        this.container = Objects.requireNonNull(container, "container");
        if (busyInterval.isNegative()) {
            throw new IllegalArgumentException("busyInterval must not be negative, was " + busyInterval);
        }
        this.busyInterval = busyInterval;
        this.budgetStopper = budgetStopper;
    }

    /**
     * The advice chain for {@code container}: Sumi's outer advice, the application's advices (the
     * container factory's chain), Sumi's inner advice. Sumi's advices already in {@code chain} are
     * dropped, so wrapping twice is harmless.
     */
    public static Advice[] wrap(
            AbstractMessageListenerContainer container,
            Advice @Nullable [] chain,
            Duration busyInterval,
            @Nullable RabbitBudgetListenerStopper budgetStopper) {
        SumiRabbitContainerAdvice advice = new SumiRabbitContainerAdvice(container, busyInterval, budgetStopper);
        List<Advice> advices = new ArrayList<>();
        advices.add(advice.new Outer());
        if (chain != null) {
            Arrays.stream(chain)
                    .filter(a -> !(a instanceof Outer) && !(a instanceof Inner))
                    .forEach(advices::add);
        }
        advices.add(advice.new Inner());
        return advices.toArray(Advice[]::new);
    }

    /** Records the delivery and acts on Sumi's verdict. */
    final class Outer implements MethodInterceptor {

        @Override
        public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
            Object[] args = invocation.getArguments();
            Object data = args.length > 1 ? args[1] : null;
            Channel channel = args.length > 0 && args[0] instanceof Channel c ? c : null;
            if (data == null) {
                return invocation.proceed();
            }
            CurrentDelivery.set(data);
            try {
                Object result = invocation.proceed();
                RuntimeException verdict = CurrentDelivery.takeVerdict();
                if (verdict != null) {
                    act(verdict, channel, data);
                }
                acknowledgeSkipped(channel);
                return result;
            } finally {
                CurrentDelivery.clear();
            }
        }
    }

    /**
     * With MANUAL acknowledgement the listener acknowledges what it saw; the duplicates Sumi kept
     * from it are acknowledged here, or they would stay unacknowledged until the channel closes.
     */
    private void acknowledgeSkipped(@Nullable Channel channel) throws IOException {
        List<Message> skipped = CurrentDelivery.takeSkipped();
        if (channel == null
                || skipped.isEmpty()
                || !container.getAcknowledgeMode().isManual()) {
            return;
        }
        for (Message message : skipped) {
            channel.basicAck(message.getMessageProperties().getDeliveryTag(), false);
        }
    }

    /** Takes Sumi's exceptions away from the application's advices. */
    final class Inner implements MethodInterceptor {

        @Override
        public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
            try {
                return invocation.proceed();
            } catch (RuntimeException ex) {
                RuntimeException verdict = verdict(ex);
                if (verdict == null) {
                    throw ex;
                }
                CurrentDelivery.verdict(verdict);
                return null;
            }
        }
    }

    /** Sumi's exception in {@code failure}'s cause chain (a batch failure caused by one included), or {@code null}. */
    static @Nullable RuntimeException verdict(Throwable failure) {
        return Verdict.find(failure);
    }

    private static boolean rejected(@Nullable Throwable t) {
        return Verdict.of(t) == Verdict.REJECT;
    }

    private void act(RuntimeException verdict, @Nullable Channel channel, Object data) throws IOException {
        Throwable cause =
                verdict instanceof BatchFailedException batch && batch.getCause() != null ? batch.getCause() : verdict;
        List<?> batch = data instanceof List<?> list ? list : null;
        int index = verdict instanceof BatchFailedException failed ? failed.index() : -1;
        if (rejected(cause)) {
            String reason = "Sumi rejected a message of queue(s) " + Arrays.toString(container.getQueueNames())
                    + " without requeue (to the dead-letter exchange, if the queue has one): " + cause.getMessage();
            log.warn(reason);
            if (batch == null || batch.size() == 1 || channel == null || index < 0) {
                throw new AmqpRejectAndDontRequeueException(reason, true, cause);
            }
            settleBatchRejection(channel, batch, index, reason, cause);
            return;
        }
        if (cause instanceof BudgetExhaustedException refusal) {
            if (budgetStopper != null) {
                budgetStopper.pause(container, refusal);
            } else {
                sleep();
            }
            throw requeue("budget '" + refusal.budget() + "' refused the call (" + refusal.reason() + ")", cause);
        }
        sleep();
        throw requeue(cause.getMessage(), cause);
    }

    /**
     * The message at {@code index} goes to the dead-letter exchange and the others of the batch are
     * requeued. The container settles the batch by its highest delivery tag (with
     * {@code multiple=true}), which must still be outstanding then: the other messages are settled
     * here, the last one by the exception.
     */
    private static void settleBatchRejection(Channel channel, List<?> batch, int index, String reason, Throwable cause)
            throws IOException {
        int last = batch.size() - 1;
        if (index == last) {
            // Requeue everything before it, then let the container reject the last one.
            channel.basicNack(tag(batch.get(last - 1)), true, true);
            throw new AmqpRejectAndDontRequeueException(reason, true, cause);
        }
        channel.basicReject(tag(batch.get(index)), false);
        throw requeue("the rest of a batch with a rejected message", cause);
    }

    private static long tag(Object message) {
        return ((Message) message).getMessageProperties().getDeliveryTag();
    }

    /** Requeue, in AUTO and MANUAL mode (the inner exception makes a MANUAL container settle it). */
    private static ImmediateRequeueAmqpException requeue(@Nullable String why, Throwable cause) {
        String message = "Sumi requeues the delivery: " + why;
        return new ImmediateRequeueAmqpException(message, new AmqpRejectAndDontRequeueException(message, true, cause));
    }

    private void sleep() {
        try {
            Thread.sleep(busyInterval.toMillis());
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }
}
