package io.sumi.jms;

import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.binder.IdempotentHandlerInterceptorSupport;
import io.sumi.consumer.exception.Verdict;
import io.sumi.consumer.messaging.SpringMessageInboundMessage;
import io.sumi.jms.internal.CurrentJmsDelivery;
import io.sumi.jms.internal.JmsListenerBinder;
import jakarta.jms.Message;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.jms.annotation.JmsListener;
import org.springframework.util.ClassUtils;

/**
 * Runs {@link IdempotentHandler} methods of Spring JMS listeners through the
 * {@link IdempotentExecutor}.
 *
 * <p>The message is found, in order: for the {@code @JmsListener} method the container invokes
 * (not nested in another guarded call), the JMS message the container is delivering on this
 * thread (recorded by Sumi's listener wrapper, {@link SumiJmsMessageListener}, so any parameter
 * style works: a {@code jakarta.jms.Message} or {@code TextMessage}, a messaging
 * {@code Message<?>}, a payload with {@code @Header}s, a payload alone); then, for every method, a
 * JMS {@link Message} argument, then a messaging {@code Message<?>} argument. JMS listeners have no
 * batches: one message per call.
 *
 * <p>Failures are left to the listener wrapper, which turns Sumi's exceptions into what the JMS
 * session understands (docs/jms.md).
 */
public final class IdempotentJmsHandlerInterceptor extends IdempotentHandlerInterceptorSupport {

    /**
     * A JMS container settles the message when the method returns, before a returned future
     * completes (Spring JMS only sends such a future's value as the reply): asynchronous methods are refused.
     */
    private static final boolean WAITS_FOR_ASYNC_RESULTS = false;

    public IdempotentJmsHandlerInterceptor(IdempotentExecutor executor, HandlerDefaults defaults) {
        this(() -> executor, () -> defaults);
    }

    /**
     * An interceptor that looks its executor and defaults up on first use, so that creating the
     * advisor (which the auto-proxy creator does early) creates neither the ledger's DataSource nor
     * the configuration properties early.
     */
    public IdempotentJmsHandlerInterceptor(Supplier<IdempotentExecutor> executor, Supplier<HandlerDefaults> defaults) {
        super(executor, defaults, "a JMS listener container", WAITS_FOR_ASYNC_RESULTS);
    }

    @Override
    protected @Nullable Object guard(
            MethodInvocation invocation, HandlerDefinition definition, boolean listenerInvocation) throws Exception {
        if (listenerInvocation) {
            Message current = CurrentJmsDelivery.message();
            if (current != null) {
                return execute(invocation, definition, new JmsInboundMessage(current), DELIVERY);
            }
        }
        InboundMessage message = messageArgument(invocation.getArguments());
        if (message == null) {
            throw calledWithoutMessage(
                    invocation.getMethod(),
                    listenerInvocation,
                    "Sumi's listener wrapper must be on its listener container (the starter puts it on every"
                            + " container a JmsListenerContainerFactory creates), or give it a jakarta.jms.Message parameter",
                    "it is not the @JmsListener method the container invokes, so its key must come from its own"
                            + " arguments; give it a jakarta.jms.Message parameter, or put @IdempotentHandler on the"
                            + " @JmsListener method");
        }
        return execute(invocation, definition, message, Settlement.NONE);
    }

    /**
     * How the delivery on this thread is settled by the listener wrapper: a refusal before the
     * method ran is recorded as the delivery's own, for the wrapper to settle.
     */
    private static final Settlement DELIVERY = new Settlement() {
        @Override
        public void failed(Throwable failure, boolean ran) {
            if (!ran && failure instanceof RuntimeException ex && Verdict.of(ex) != null) {
                CurrentJmsDelivery.refusedAtEntry(ex);
            }
        }
    };

    /** Whether the listener container invokes {@code method} itself: a {@code @JmsListener} method. */
    public static boolean isListenerMethod(Method method) {
        return JmsListenerBinder.isListenerMethod(method);
    }

    /** Whether {@code method} takes a JMS {@link Message} (or a subtype). */
    public static boolean hasJmsMessageParameter(Method method) {
        return JmsListenerBinder.hasJmsMessageParameter(method);
    }

    /**
     * Checks at start-up that an annotated method can find its message: a listener method always
     * can (through the container's delivery); any other method needs a JMS {@link Message} or a
     * messaging {@code Message} parameter.
     *
     * @throws IllegalStateException if it cannot, with what to do
     */
    public static void checkMessageSource(Method method) {
        if (isListenerMethod(method)
                || hasParameterOf(method, Message.class, org.springframework.messaging.Message.class)) {
            return;
        }
        throw new IllegalStateException(
                "@IdempotentHandler method " + ClassUtils.getQualifiedMethodName(method)
                        + " is not a @JmsListener method and has no message parameter, so Sumi cannot tell which message it"
                        + " guards. Give it a jakarta.jms.Message parameter, or put @IdempotentHandler on the @JmsListener method");
    }

    @Override
    protected boolean invokedByContainer(Method method, Class<?> targetClass) {
        return isListenerMethod(method);
    }

    /** The consumer name defaults to the {@code @JmsListener} id, else {@code Class.method}. */
    @Override
    protected @Nullable String listenerId(Method method, Class<?> targetClass) {
        JmsListener listener = AnnotatedElementUtils.findMergedAnnotation(method, JmsListener.class);
        return listener != null ? listener.id() : null;
    }

    /** @throws IllegalStateException if the method asks to keep replies ({@code storeReply}), which this binder does not */
    @Override
    protected void checkDefinition(Method method, HandlerDefinition definition) {
        if (definition.storeReply()) {
            throw new IllegalStateException("@IdempotentHandler(storeReply = true) on "
                    + ClassUtils.getQualifiedMethodName(method)
                    + ": the JMS binder does not keep replies (a duplicate's reply is not sent again,"
                    + " docs/jms.md); drop storeReply");
        }
    }

    @Override
    protected @Nullable InboundMessage nativeMessage(Object arg) {
        return arg instanceof Message message ? new JmsInboundMessage(message) : null;
    }

    /** Every messaging {@code Message} (JMS listeners have no batches), its headers looked up as JMS property names. */
    @Override
    protected @Nullable InboundMessage springMessage(org.springframework.messaging.Message<?> message) {
        return new JmsMappedMessage(new SpringMessageInboundMessage(message));
    }

    /**
     * A messaging {@code Message} made from a JMS message by Spring's header mapper (properties
     * under their own names): header names are looked up as {@link JmsPropertyNames} says.
     */
    private record JmsMappedMessage(SpringMessageInboundMessage delegate) implements InboundMessage {

        @Override
        public Object source() {
            return delegate.source();
        }

        @Override
        public @Nullable Object payload() {
            return delegate.payload();
        }

        @Override
        public @Nullable Object header(String name) {
            return JmsPropertyNames.lookup(name, delegate::header);
        }

        @Override
        public Map<String, @Nullable Object> headers() {
            return delegate.headers();
        }

        @Override
        public @Nullable String fingerprint() {
            return delegate.fingerprint();
        }
    }
}
