import numpy as np, jax, jaxnn, time
rng=np.random.default_rng(0); X=rng.normal(size=(200,3)); y=(X[:,0]>0).astype(int)
for loss in ["exponential","logistic","squared","matsushita"]:
    m=jaxnn.uls(X,y,rounds=50,loss=loss); print(loss, np.isfinite(m.risk).all(), m.risk[-1], np.isfinite(np.asarray(jaxnn.predict_proba(m,X))).all())
for name in ["ionosphere","wdbc"]:
    X,y=jaxnn.datasets.load(name); tr=np.arange(len(y))%2==0
    for weak in ["rules","linear","knn",["linear","rules"]]:
        t=time.time(); m=jaxnn.uls(X[tr],y[tr],weak=weak); print(name, weak, m.rounds, round((jaxnn.predict(m,X[~tr])==y[~tr]).mean(),3), round(time.time()-t,1))
    m=jaxnn.uls(X[tr],y[tr],loss=["squared","logistic","matsushita","phi_mu(0.5)","phi_power(0.5)"],loss_choice="fold"); print("fold", m.loss.name, m.rounds, (jaxnn.predict(m,X[~tr])==y[~tr]).mean())
