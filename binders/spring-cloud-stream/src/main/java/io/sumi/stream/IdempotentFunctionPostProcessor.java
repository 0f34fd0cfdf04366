package io.sumi.stream;

import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.ListenerReturnTypes;
import io.sumi.consumer.MessageKeyResolver;
import io.sumi.consumer.messaging.MessageReplyCodec;
import io.sumi.stream.internal.IdempotentConsumer;
import io.sumi.stream.internal.IdempotentFunction;
import io.sumi.stream.internal.IdempotentInvoker;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Type;
import java.util.Collection;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.BeanCreationException;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.context.ApplicationListener;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.core.ResolvableType;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.messaging.Message;
import org.springframework.util.ClassUtils;

/**
 * Makes Spring Cloud Stream functional beans idempotent: a {@code Consumer} or {@code Function}
 * bean whose {@code @Bean} method is annotated {@link IdempotentHandler} is replaced by a wrapper
 * that runs it through the {@link IdempotentExecutor}, once per message key.
 *
 * <pre>{@code
 * @Bean
 * @IdempotentHandler(mode = IdempotencyMode.LEASE)
 * Consumer<Message<MailRequest>> sendMail(Mailer mailer) {
 *     return message -> mailer.send(message.getPayload(), IdempotencyContext.current().key());
 * }
 * }</pre>
 *
 * <p>The annotation is found on the bean's factory method (through its bean definition, since a
 * lambda has no annotations of its own), or on the {@code accept} / {@code apply} method of a bean
 * class that implements {@code Consumer} / {@code Function}. The ledger namespace defaults to the
 * bean name. The wrapper keeps the bean's generic type visible to Spring Cloud Function, which
 * reads it from the bean definition, so payloads are converted as before.
 *
 * <p>Supported inputs: {@code T}, {@code Message<T>}, and for batch bindings {@code List<T>} and
 * {@code Message<List<T>>} (consumers only; each batch is claimed in one round trip).
 * {@code storeReply} (docs/replies.md) is for {@code Function} beans: the output is kept with the
 * ledger row and a duplicate's output is the kept one, read back as the function's declared output
 * type; on a {@code Consumer} it is refused at start-up. Reactive
 * functions ({@code Flux}, {@code Mono}), suppliers and bi-functions are rejected at start-up with
 * a clear error, as is an invalid annotation (bad lease or key expression).
 *
 * <p>Works together with the {@link SumiStreamChannelInterceptor}, which must be registered as a
 * global channel interceptor so that payload-only functions see their message's headers.
 */
public final class IdempotentFunctionPostProcessor
        implements BeanPostProcessor, BeanFactoryAware, ApplicationListener<ContextClosedEvent> {

    private final Supplier<IdempotentExecutor> executor;
    private final Supplier<HandlerDefaults> defaults;
    private final Supplier<StreamSettings> settings;
    private final Supplier<MessageReplyCodec> replyCodec;
    private @Nullable ConfigurableListableBeanFactory beanFactory;
    private final Map<String, String> functionBudgets = new ConcurrentHashMap<>();
    /** Set when the context closes (before the bindings stop): messages held as busy go to the binder then. */
    private volatile boolean closing;

    public IdempotentFunctionPostProcessor(
            Supplier<IdempotentExecutor> executor, Supplier<HandlerDefaults> defaults, StreamSettings settings) {
        this(executor, defaults, () -> settings);
    }

    /**
     * @param executor looked up on the first message, so that post-processing creates neither the ledger nor its DataSource early
     * @param defaults what annotation attributes left at their defaults mean, looked up when the first annotated bean is wrapped
     * @param settings looked up when the first annotated bean is wrapped
     */
    public IdempotentFunctionPostProcessor(
            Supplier<IdempotentExecutor> executor,
            Supplier<HandlerDefaults> defaults,
            Supplier<StreamSettings> settings) {
        this(executor, defaults, settings, IdempotentFunctionPostProcessor::replyCodec);
    }

    /**
     * @param replyCodec how functions that keep their replies ({@code storeReply}) keep them,
     *     looked up when the first such function is wrapped ({@link #replyCodec()} by default)
     * @since 0.1.0
     */
    public IdempotentFunctionPostProcessor(
            Supplier<IdempotentExecutor> executor,
            Supplier<HandlerDefaults> defaults,
            Supplier<StreamSettings> settings,
            Supplier<MessageReplyCodec> replyCodec) {
        this.executor = memoize(executor);
        this.defaults = defaults;
        this.settings = memoize(settings);
        this.replyCodec = memoize(replyCodec);
    }

    /**
     * The default codec of kept function outputs: Spring's Jackson converter for outputs that are
     * neither {@code String} nor {@code byte[]} when Jackson 3 is present; the headers of a kept
     * {@code Message} output that belong to the input or the transport ({@code kafka_*},
     * {@code amqp_*}, {@code id}, {@code timestamp}) are dropped, so a duplicate's output gets the
     * new input's.
     */
    public static MessageReplyCodec replyCodec() {
        return MessageReplyCodec.withDefaultConverter("kafka_", "amqp_");
    }

    @Override
    public void setBeanFactory(BeanFactory beanFactory) throws BeansException {
        if (beanFactory instanceof ConfigurableListableBeanFactory configurable) {
            this.beanFactory = configurable;
        }
    }

    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) throws BeansException {
        boolean consumer = bean instanceof Consumer<?>;
        boolean function = bean instanceof Function<?, ?>;
        if (!consumer && !function) {
            if (bean instanceof Supplier<?>
                    || bean instanceof BiFunction<?, ?, ?>
                    || bean instanceof BiConsumer<?, ?>) {
                if (annotated(bean, beanName) != null) {
                    throw new BeanCreationException(
                            beanName,
                            "@IdempotentHandler is supported on Consumer and Function beans" + " only, not on "
                                    + ClassUtils.getUserClass(bean).getName());
                }
            }
            return bean;
        }
        Annotated annotated = annotated(bean, beanName);
        if (annotated == null) {
            return bean;
        }
        try {
            boolean storeReply = annotated.annotation().storeReply();
            if (storeReply && !function) {
                // Refused, never ignored: a Consumer has no output to keep or to send again.
                throw new IllegalStateException("storeReply keeps a function's output for duplicates, but a Consumer"
                        + " has no output: make it a Function, or drop storeReply");
            }
            ResolvableType functionType = annotated.type().as(function ? Function.class : Consumer.class);
            checkInput(functionType.getGeneric(0), function);
            if (function) {
                checkOutput(functionType.getGeneric(1));
            }
            HandlerDefinition definition =
                    defaults.get().resolve(annotated.annotation(), beanName, false, "bean '" + beanName + "'");
            new MessageKeyResolver().validate(definition);
            IdempotentInvoker invoker = new IdempotentInvoker(
                    beanName,
                    definition,
                    executor,
                    settings.get().busyPolicy(),
                    storeReply
                            ? new IdempotentInvoker.Replies(replyCodec.get(), replyType(functionType.getGeneric(1)))
                            : null,
                    () -> !closing);
            if (!annotated.annotation().budget().isBlank()) {
                functionBudgets.put(beanName, annotated.annotation().budget());
            }
            return function
                    ? new IdempotentFunction((Function<?, ?>) bean, invoker)
                    : new IdempotentConsumer((Consumer<?>) bean, invoker);
        } catch (IllegalArgumentException | IllegalStateException ex) {
            throw new BeanCreationException(
                    beanName, "Invalid @IdempotentHandler on " + annotated.where() + ": " + ex.getMessage(), ex);
        }
    }

    /** Ends every busy hold: a closing application hands held messages back to the binder. */
    @Override
    public void onApplicationEvent(ContextClosedEvent event) {
        if (beanFactory == null || event.getApplicationContext().getAutowireCapableBeanFactory() == beanFactory) {
            closing = true;
        }
    }

    /**
     * The budgets of the functions made idempotent so far, by function bean name (for the
     * {@link BudgetBindingPauser}).
     */
    public Map<String, String> functionBudgets() {
        return Map.copyOf(functionBudgets);
    }

    private record Annotated(IdempotentHandler annotation, ResolvableType type, String where) {}

    /** The annotation on the bean's factory method, or on its class's functional method. */
    private @Nullable Annotated annotated(Object bean, String beanName) {
        if (beanFactory != null && beanFactory.containsBeanDefinition(beanName)) {
            BeanDefinition definition = beanFactory.getMergedBeanDefinition(beanName);
            if (definition instanceof RootBeanDefinition root) {
                Method factoryMethod = root.getResolvedFactoryMethod();
                if (factoryMethod != null) {
                    IdempotentHandler annotation =
                            AnnotatedElementUtils.findMergedAnnotation(factoryMethod, IdempotentHandler.class);
                    return annotation == null
                            ? null
                            : new Annotated(
                                    annotation,
                                    ResolvableType.forMethodReturnType(factoryMethod),
                                    factoryMethod.toString());
                }
            }
        }
        Class<?> userClass = ClassUtils.getUserClass(bean);
        for (Method method : userClass.getMethods()) {
            if ((method.getName().equals("accept") || method.getName().equals("apply"))
                    && method.getParameterCount() == 1
                    && !method.isBridge()
                    && !Modifier.isStatic(method.getModifiers())) {
                IdempotentHandler annotation =
                        AnnotatedElementUtils.findMergedAnnotation(method, IdempotentHandler.class);
                if (annotation != null) {
                    return new Annotated(annotation, ResolvableType.forClass(userClass), method.toString());
                }
            }
        }
        return null;
    }

    /**
     * An asynchronous output ({@code Mono}, {@code Flux}, {@code CompletableFuture}) is refused
     * (the one rule is {@link ListenerReturnTypes}): Sumi completes the row when the function
     * returns, before such an output has produced anything, and the binding sends or acks the
     * message without waiting for its completion in a way the ledger can follow.
     */
    private static void checkOutput(ResolvableType output) {
        Class<?> raw = output.resolve(Object.class);
        if (Message.class.isAssignableFrom(raw)) {
            raw = output.getGeneric(0).resolve(Object.class);
        }
        if (ListenerReturnTypes.of(raw) != ListenerReturnTypes.Kind.SYNCHRONOUS) {
            throw new IllegalStateException("reactive or asynchronous function outputs (" + raw.getSimpleName()
                    + ") are not supported: Sumi completes the message's ledger row when the function returns, before"
                    + " its " + raw.getSimpleName() + " completes, so a failure afterwards would never be retried."
                    + " Return the result itself (an imperative Function<T, R>)");
        }
    }

    private static void checkInput(ResolvableType input, boolean function) {
        Class<?> raw = input.resolve(Object.class);
        if (Publisher.class.isAssignableFrom(raw)) {
            throw new IllegalStateException("reactive functions (" + raw.getSimpleName() + " input) are not supported:"
                    + " Sumi claims each message before the function runs, which needs an imperative function");
        }
        boolean batch = Collection.class.isAssignableFrom(raw)
                || (Message.class.isAssignableFrom(raw)
                        && Collection.class.isAssignableFrom(input.getGeneric(0).resolve(Object.class)));
        if (batch && function) {
            throw new IllegalStateException("batch Functions are not supported (a batch has no one key for its output):"
                    + " use a batch Consumer that sends its results with StreamBridge");
        }
    }

    /**
     * The type a kept reply is read back as: the function's declared output type, {@code byte[]}
     * (the kept bytes as they are) where it cannot be resolved ({@code Function<T, ?>}, an
     * {@code Object} output, a {@code Message<?>} output).
     */
    static Type replyType(ResolvableType output) {
        if (Message.class.isAssignableFrom(output.toClass())) {
            Class<?> payload = output.getGeneric(0).resolve(Object.class);
            return payload == Object.class
                    ? ResolvableType.forClassWithGenerics(Message.class, byte[].class)
                            .getType()
                    : output.getType();
        }
        Class<?> raw = output.resolve(Object.class);
        return raw == Object.class ? byte[].class : output.getType();
    }

    private static <T> Supplier<T> memoize(Supplier<T> supplier) {
        return new Supplier<>() {
            private volatile @Nullable T value;

            @Override
            public T get() {
                T current = value;
                if (current == null) {
                    current = supplier.get();
                    value = current;
                }
                return current;
            }
        };
    }
}
