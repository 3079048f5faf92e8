# The table of the results doc: python3 table.py KT.json RANDOM_START.json [SEEDED_KT.json]
# (the third file's Kernel Tuner strategies replace the first's).
import json,sys,os
kt=json.load(open(sys.argv[1])); rs=json.load(open(sys.argv[2]))
if len(sys.argv)>3:
    for x,y in zip(kt,json.load(open(sys.argv[3]))):
        for k,v in y['strategies'].items():
            if k.startswith('kt:'): x['strategies'][k]=v
rsb={s['space_file']:s for s in rs}
def f(s):
    if s is None: return 'n/a'
    e=s['evaluations_to_5pct']
    med='—' if e['median'] is None else ('%g'%e['median'])
    return '%+.2f [%+.2f, %+.2f]; %s (%d%%)'%(s['score'],s['score_ci95'][0],s['score_ci95'][1],med,round(100*e['reached']))
print('| space (points, budget) | mcts (default), from defaults | mcts from random starts | surrogate (defaults / random) | best Kernel Tuner strategy | kevo random / kt random_sample |')
print('|---|---|---|---|---|---|')
tot={'m':[], 'r':[], 'kt':[]}
ktall={}
for s in kt:
    name=os.path.basename(s['space_file'])[:-5]
    st=s['strategies']; r=rsb[s['space_file']]['strategies']
    kts={k:v for k,v in st.items() if k.startswith('kt:')}
    for k,v in kts.items(): ktall.setdefault(k[3:],[]).append(v['score'])
    bk=max(kts,key=lambda k:kts[k]['score'])
    print('| %s (%d, %d) | %s | %s | %+.2f / %+.2f | %s %s | %+.2f / %+.2f |'%(name,s['points'],s['budget'],f(st['mcts']),f(r['mcts']),st['surrogate']['score'],r['surrogate']['score'],bk[3:],f(kts[bk]),st['random']['score'],kts['kt:random_sample']['score']))
    tot['m'].append(st['mcts']['score']); tot['r'].append(r['mcts']['score']); tot['kt'].append(kts[bk]['score'])
m=lambda a:sum(a)/len(a)
print('| mean | %+.2f | %+.2f | | %+.2f (best of 12 per space) | |'%(m(tot['m']),m(tot['r']),m(tot['kt'])))
print()
print(', '.join('%s %+.2f'%(k,m(v)) for k,v in sorted(ktall.items(),key=lambda kv:-m(kv[1]))))
