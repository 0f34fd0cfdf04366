package com.example.sumifixtures.extra;

import io.sumi.consumer.IdempotentHandler;

/** A handler on another binder's listener method. */
public class OwnBinderHandler {

    @OwnListener
    @IdempotentHandler
    public void onMessage(String payload) {}
}
